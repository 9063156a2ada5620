"""Role input checks of mainline_kernel, intel_stack and arcops_helpers; pinned files hashed on the
control node; unknown roles and any values refused in one line, never a crash."""

import hashlib

import pytest
from arcops.stages import role_inputs
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.role_inputs_cases import KERNEL, LLAMA, SHA


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        (
            {"mainline_kernel_release": "latest"},
            [
                "mainline_kernel_release must be the release the packages install, e.g. "
                '7.2.0-070200-generic (got "latest")'
            ],
        ),
        ({"mainline_kernel_packages": []}, ["mainline_kernel_packages is empty"]),
        (
            {"mainline_kernel_packages": [{"url": "http://k/a.deb", "path": "/a.deb", "sha256": SHA}]},
            [
                '{"path": "/a.deb", "sha256": "'
                + SHA
                + '", "url": "http://k/a.deb"}: give exactly one of url, path'
            ],
        ),
        (
            {"mainline_kernel_packages": [{"url": "ftp://k/a.deb", "sha256": SHA}]},
            ["ftp://k/a.deb: not an http(s) URL"],
        ),
        (
            {"mainline_kernel_packages": [{"path": "/k/a.tar", "sha256": "x"}]},
            ["/k/a.tar: not a .deb file name", "/k/a.tar: sha256 must be 64 lowercase hex digits"],
        ),
        (
            {
                "mainline_kernel_packages": [
                    {"url": "http://k/a.deb", "sha256": SHA},
                    {"url": "http://m/a.deb", "sha256": SHA},
                ]
            },
            ["two packages have the same file name"],
        ),
        ({"mainline_kernel_bootloader": "none"}, ["mainline_kernel_make_default needs the GRUB bootloader"]),
    ],
)
def test_mainline_kernel_names_every_problem(over, expected):
    assert role_inputs.problems("mainline_kernel", {**KERNEL, **over}) == expected


def test_a_local_file_is_hashed_on_the_control_node_once_the_rest_passes(tmp_path):
    deb = tmp_path / "linux-image-7.2.0_amd64.deb"
    deb.write_bytes(b"!<arch>\n")
    good = hashlib.sha256(deb.read_bytes()).hexdigest()
    ok = {**KERNEL, "mainline_kernel_packages": [{"path": str(deb), "sha256": good}]}
    assert role_inputs.problems("mainline_kernel", ok) == []
    wrong = {**KERNEL, "mainline_kernel_packages": [{"path": str(deb), "sha256": SHA}]}
    assert role_inputs.problems("mainline_kernel", wrong) == [
        f"{deb}: sha256 {good} differs from the one given ({SHA})"
    ]
    gone = {**LLAMA, "llama_cpp_sycl_oneapi_installer": {"path": str(tmp_path / "none.sh"), "sha256": SHA}}
    assert role_inputs.problems("llama_cpp_sycl", gone) == [
        f"{tmp_path}/none.sh: no such file on the control node"
    ]
    assert role_inputs.message(["a", "b"]) == "a; b. Nothing was changed."


def test_an_unknown_role_or_values_that_are_not_a_mapping_are_refused():
    with pytest.raises(role_inputs.InputsError, match="role: 'nope' has no input checks here"):
        role_inputs.problems("nope", {})
    with pytest.raises(role_inputs.InputsError, match="values: must be a mapping"):
        role_inputs.problems("mainline_kernel", ["x"])


_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.sampled_from(sorted(role_inputs.CHECKS)),
    st.dictionaries(st.sampled_from(sorted(LLAMA) + sorted(KERNEL)), _ANY),
)
@example("mainline_kernel", {"mainline_kernel_packages": [None, "x", {"path": 3}]})
@example("llama_cpp_sycl", {"llama_cpp_sycl_build_jobs": float("inf")})  # int(inf) raises OverflowError
@example("llama_cpp_sycl", {"llama_cpp_sycl_cmake_extra_args": 7})  # not a list: iterating it raised
@example("vllm_service", {"vllm_service_image_archive": {"path": "/\x00"}, "vllm_service_py_spy_wheel": []})
def test_any_values_give_a_list_of_problems_never_a_crash(role, values):
    found = role_inputs.problems(role, values)
    assert isinstance(found, list) and all(isinstance(p, str) for p in found)


def test_the_module_documents_every_role_with_checks():
    doc = (REPO / "plugins/modules/arcops_inputs.py").read_text()
    assert f"choices: [{', '.join(role_inputs.CHECKS)}]" in doc


def test_intel_stack_checks_the_lock_and_the_bundle_on_the_control_node(tmp_path):
    import json

    from arcops.kernel import bundle

    from .helpers.bundle_builder import build_bundle

    tarball = build_bundle(tmp_path / "b")
    lock = bundle.make_lock(tarball, "server")
    lock_file = tmp_path / "bundle.lock.json"
    lock_file.write_text(json.dumps(lock))
    values = {
        "intel_stack_lock_file": str(lock_file),
        "intel_stack_bundle": str(tarball),
        "intel_stack_kernel_release": lock["kernel_release"],
        "intel_stack_guc_version": "70.60.0",
    }
    assert role_inputs.problems("intel_stack", values) == []
    assert (
        role_inputs.problems("intel_stack", {**values, "intel_stack_bundle": "https://mirror/b.tar.xz"}) == []
    )
    missing = role_inputs.problems("intel_stack", {**values, "intel_stack_lock_file": ""})
    assert missing == [
        "The bundle lock (arcops_stack_lock is empty) is not a file on the control node: make it from the "
        f"installer tarball with `arcops stack bundle lock {tarball.name} -o LOCK.json` and commit it to the "
        "inventory"
    ]
    other = role_inputs.problems("intel_stack", {**values, "intel_stack_kernel_release": "7.0.0-1-other"})
    assert other == [
        f"The bundle lock {lock_file} pins kernel {lock['kernel_release']} and GuC 70.60.0, but the stack "
        "pins kernel 7.0.0-1-other and GuC 70.60.0. Lock the bundle that carries the pinned stack"
    ]
    tampered = tmp_path / "tampered.tar.xz"
    tampered.write_bytes(tarball.read_bytes() + b"\0")
    found = role_inputs.problems("intel_stack", {**values, "intel_stack_bundle": str(tampered)})
    assert (
        len(found) == 1
        and found[0].startswith(f"{tampered}: sha256 ")
        and found[0].endswith(f"differs from the lock ({lock['installer']['sha256']})")
    )
    lock_file.write_text("{not json")
    assert role_inputs.problems("intel_stack", values)[0].startswith(f"lock {lock_file}: not JSON")


def test_arcops_helpers_names_every_problem():
    good = {
        "arcops_helpers_lib": "/usr/local/lib/arcops",
        "arcops_helpers_metrics": "True",
        "arcops_helpers_metrics_dir": "/var/lib/prometheus/node-exporter",
        "arcops_helpers_metrics_interval": "60",
    }
    assert role_inputs.problems("arcops_helpers", good) == []
    bad = {**good, "arcops_helpers_lib": "lib", "arcops_helpers_metrics_dir": "/var/my metrics"}
    assert role_inputs.problems("arcops_helpers", {**bad, "arcops_helpers_metrics_interval": "5"}) == [
        "arcops_helpers_lib must be an absolute path without spaces",
        "arcops_helpers_metrics_dir must be an absolute path without spaces",
        "arcops_helpers_metrics_interval must be at least 10 seconds",
    ]
