"""Each role's input checks: every problem at once, named by the variable, never a crash; a
pinned file on the control node is hashed there."""

import hashlib

import pytest
from arcops.stages import role_inputs
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .conftest import REPO

SHA = "ab" * 32
LLAMA = {
    "llama_cpp_sycl_oneapi_version": "2026.2.0",
    "llama_cpp_sycl_oneapi_source": "offline",
    "llama_cpp_sycl_oneapi_installer": {"url": "https://mirror.example/oneapi.sh", "sha256": SHA},
    "llama_cpp_sycl_oneapi_apt_key": {},
    "llama_cpp_sycl_oneapi_apt_url": "https://apt.repos.intel.com/oneapi",
    "llama_cpp_sycl_oneapi_apt_packages": ["intel-oneapi-base-toolkit-2026.2"],
    "llama_cpp_sycl_git_url": "https://github.com/ggml-org/llama.cpp.git",
    "llama_cpp_sycl_version": "b8696",
    "llama_cpp_sycl_cmake_extra_args": ["-DGGML_SYCL_GRAPH=ON"],
    "llama_cpp_sycl_build_jobs": 2,
    "llama_cpp_sycl_probe_gib": 4,
    "llama_cpp_sycl_probe_max_host_ram_fraction": 0.01,
    "llama_cpp_sycl_server_enabled": True,
    "llama_cpp_sycl_server_model": "/srv/models/m.gguf",
    "llama_cpp_sycl_server_port": 8080,
    "llama_cpp_sycl_server_host": "127.0.0.1",
    "llama_cpp_sycl_server_api_key": False,
    "llama_cpp_sycl_server_user": "llama-server",
    "llama_cpp_sycl_server_extra_args": ["--flash-attn", "on"],
}
KERNEL = {
    "mainline_kernel_release": "7.2.0-070200-generic",
    "mainline_kernel_packages": [
        {"url": "https://kernel.example/linux-image-7.2.0_amd64.deb", "sha256": SHA}
    ],
    "mainline_kernel_make_default": True,
    "mainline_kernel_bootloader": "grub",
}

VLLM = {
    "vllm_service_docker_source": "distro",
    "vllm_service_docker_version": "26.1.5+dfsg1-9+b9",
    "vllm_service_docker_host": "unix:///var/run/docker.sock",
    "vllm_service_report_dir": "/var/lib/arcops/vllm/starts",
    "vllm_service_docker_repo_key": {},
    "vllm_service_image": "intel/llm-scaler-vllm:0.26.0-b2",
    "vllm_service_image_digest": "sha256:" + SHA,
    "vllm_service_image_archive": {},
    "vllm_service_py_spy_wheel": {"url": "https://files.example/py_spy-0.4.1.whl", "sha256": SHA},
    "vllm_service_watchdog_attempts": 3,
    "vllm_service_watchdog_start_timeout": 900,
    "vllm_service_health_interval": "15",  # as Ansible templates them
    "vllm_service_health_stall_seconds": "300",
    "vllm_service_health_max_restarts_per_hour": "3",
    "vllm_service_health_min_interval": "0",
}


def test_good_inputs_pass():
    assert role_inputs.problems("llama_cpp_sycl", LLAMA) == []
    assert role_inputs.problems("mainline_kernel", KERNEL) == []
    assert role_inputs.problems("vllm_service", VLLM) == []


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        (
            {"vllm_service_docker_version": ""},
            ["vllm_service_docker_version must name the exact distro package version to install and hold"],
        ),
        ({"vllm_service_docker_source": "none", "vllm_service_docker_version": ""}, []),
        (
            {"vllm_service_docker_source": "docker_repo"},
            ["vllm_service_docker_repo_key is empty: give {path, sha256} or {url, sha256}"],
        ),
        (
            {"vllm_service_image_digest": "latest"},
            [
                "vllm_service_image_digest must be sha256:<64 hex> to pull intel/llm-scaler-vllm:0.26.0-b2 "
                "(or give vllm_service_image_archive)"
            ],
        ),
        (
            {
                "vllm_service_image_digest": "",
                "vllm_service_image_archive": {"url": "https://a/i.tar", "sha256": SHA},
            },
            [],
        ),
        (
            {"vllm_service_image_archive": {"path": "/i.tar"}, "vllm_service_py_spy_wheel": {}},
            [
                "vllm_service_image_archive: sha256 must be 64 lowercase hex digits",
                "vllm_service_py_spy_wheel is empty: give {path, sha256} or {url, sha256}",
            ],
        ),
        (
            {"vllm_service_watchdog_attempts": 11, "vllm_service_watchdog_start_timeout": "30"},
            [
                "vllm_service_watchdog_attempts must be 1 to 10",
                "vllm_service_watchdog_start_timeout must be at least 60 seconds",
            ],
        ),
        (
            {
                "vllm_service_health_interval": "30",
                "vllm_service_health_stall_seconds": "20",
                "vllm_service_health_max_restarts_per_hour": "0",
                "vllm_service_health_min_interval": "-1",
            },
            [
                "vllm_service_health_stall_seconds must be at least vllm_service_health_interval",
                "vllm_service_health_max_restarts_per_hour must be 1 to 60",
                "vllm_service_health_min_interval must be 0 or more seconds",
            ],
        ),
        ({"vllm_service_health_interval": "0"}, ["vllm_service_health_interval must be at least 1 second"]),
        # Values that go into the units' command lines: one word, no newline, no bare %.
        (
            {"vllm_service_report_dir": "/var/lib/a b", "vllm_service_docker_host": "unix:///x%i"},
            [
                "vllm_service_docker_host holds a % that systemd would expand: write %% for a literal %",
                "vllm_service_report_dir must be one word without spaces (it goes into the units' "
                "command lines)",
            ],
        ),
        (
            {"vllm_service_report_dir": "/var/lib/x\nExecStartPre=/bin/sh"},
            [
                "vllm_service_report_dir must be one word without spaces (it goes into the units' "
                "command lines)"
            ],
        ),
        (
            {"vllm_service_report_dir": "/var/lib/x\x00y"},
            ["vllm_service_report_dir holds a control character (a newline or NUL would rewrite the unit)"],
        ),
        ({"vllm_service_report_dir": "/var/lib/100%%"}, []),
    ],
)
def test_vllm_service_names_every_problem(over, expected):
    assert role_inputs.problems("vllm_service", {**VLLM, **over}) == expected


def test_vllm_service_hashes_its_archive_on_the_control_node(tmp_path):
    archive = tmp_path / "image.tar"
    archive.write_bytes(b"not really an image")
    pinned = {"vllm_service_image_archive": {"path": str(archive), "sha256": "0" * 64}}
    found = role_inputs.problems("vllm_service", {**VLLM, **pinned})
    assert len(found) == 1 and found[0].startswith(f"{archive}: sha256 ") and "differs" in found[0]


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        (
            {"llama_cpp_sycl_oneapi_version": "latest"},
            ['llama_cpp_sycl_oneapi_version must look like 2026.2.0 (got "latest")'],
        ),
        (
            {"llama_cpp_sycl_oneapi_installer": {}},
            ["llama_cpp_sycl_oneapi_installer is empty: give {path, sha256} or {url, sha256}"],
        ),
        (
            {"llama_cpp_sycl_oneapi_installer": {"url": "ftp://x/i.sh", "path": "/i.sh", "sha256": "AB"}},
            [
                "llama_cpp_sycl_oneapi_installer: give exactly one of url, path",
                "llama_cpp_sycl_oneapi_installer: sha256 must be 64 lowercase hex digits",
            ],
        ),
        (
            {"llama_cpp_sycl_oneapi_installer": {"url": "ftp://x/i.sh", "sha256": SHA}},
            ["llama_cpp_sycl_oneapi_installer: ftp://x/i.sh is not an http(s) URL"],
        ),
        (
            {
                "llama_cpp_sycl_oneapi_source": "apt",
                "llama_cpp_sycl_oneapi_apt_url": "apt.repos",
                "llama_cpp_sycl_oneapi_apt_packages": [],
            },
            [
                "llama_cpp_sycl_oneapi_apt_key is empty: give {path, sha256} or {url, sha256}",
                "llama_cpp_sycl_oneapi_apt_url must be an http(s) or file: URL",
                "llama_cpp_sycl_oneapi_apt_packages is empty",
            ],
        ),
        (
            {"llama_cpp_sycl_version": "master"},
            ['llama_cpp_sycl_version must pin a tag or a commit (got "master"): a branch moves'],
        ),
        (
            {"llama_cpp_sycl_cmake_extra_args": ["--fresh", "-DGGML_SYCL=OFF", 3]},
            [
                'cmake argument "--fresh" is not -DNAME=VALUE',
                "cmake argument -DGGML_SYCL=OFF is set by the role (SYCL on, icx/icpx, versioned prefix)",
                "cmake argument 3 is not -DNAME=VALUE",
            ],
        ),
        (
            {
                "llama_cpp_sycl_build_jobs": 0,
                "llama_cpp_sycl_probe_gib": "x",
                "llama_cpp_sycl_probe_max_host_ram_fraction": 1,
            },
            [
                "llama_cpp_sycl_build_jobs must be at least 1",
                "llama_cpp_sycl_probe_gib must be above 0",
                "llama_cpp_sycl_probe_max_host_ram_fraction must be between 0 and 1",
            ],
        ),
        (
            {
                "llama_cpp_sycl_server_model": "m.gguf",
                "llama_cpp_sycl_server_port": 70000,
                "llama_cpp_sycl_server_host": "0.0.0.0",
            },
            [
                "llama_cpp_sycl_server_model must be the absolute path of a .gguf on the box",
                "llama_cpp_sycl_server_port must be 1-65535",
                "llama-server would listen on 0.0.0.0 without an API key: set "
                "llama_cpp_sycl_server_api_key (vaulted) or listen on 127.0.0.1",
            ],
        ),
        ({"llama_cpp_sycl_server_host": "0.0.0.0", "llama_cpp_sycl_server_api_key": True}, []),
        # The pin: https or a mirror on the box; a full commit or a tag, never a short hash.
        ({"llama_cpp_sycl_version": "69c28f1547c169902f62ca48bee75fb876c4d8e6"}, []),
        ({"llama_cpp_sycl_git_url": "/srv/llama.cpp.git"}, []),
        ({"llama_cpp_sycl_git_url": "file:///srv/llama.cpp.git"}, []),
        *[
            (
                {"llama_cpp_sycl_git_url": url},
                [
                    "llama_cpp_sycl_git_url must be an https:// URL without credentials, or a mirror on the "
                    f'box (an absolute path or file://); got "{url}"'
                ],
            )
            for url in (
                "http://github.com/ggml-org/llama.cpp.git",
                "git://github.com/ggml-org/llama.cpp.git",
                "github.com/ggml-org/llama.cpp",
            )
        ],
        (
            {"llama_cpp_sycl_git_url": "https://user:tok3n@github.com/ggml-org/llama.cpp.git"},
            [
                "llama_cpp_sycl_git_url must be an https:// URL without credentials, or a mirror on the "
                "box (an absolute path or file://); it carries credentials"
            ],
        ),
        # Extra arguments never bypass the bind check or put the key in argv, in any form.
        *[
            (
                {"llama_cpp_sycl_server_extra_args": [arg, "x"] if "=" not in arg else [arg]},
                [
                    f"llama_cpp_sycl_server_extra_args sets {arg.split('=')[0]}, which the role sets: use "
                    "llama_cpp_sycl_server_host, _port, _api_key (passed by file, never in argv) or _model"
                ],
            )
            for arg in (
                "--host",
                "--host=0.0.0.0",
                "--port",
                "--port=1",
                "--api-key",
                "--api-key=k",
                "--api-key-file",
                "-m",
            )
        ],
        (
            {"llama_cpp_sycl_server_extra_args": ["--alias", "a\nExecStartPre=/bin/sh"]},
            [
                "llama_cpp_sycl_server_extra_args holds a control character (a newline or NUL would "
                "rewrite the unit)"
            ],
        ),
        (
            {"llama_cpp_sycl_server_extra_args": ["--hf-token=hf_x"]},
            [
                "llama_cpp_sycl_server_extra_args sets --hf-token, which carries a secret: argv is "
                "readable by every user of the box"
            ],
        ),
        (
            {"llama_cpp_sycl_server_model": "/srv/m%h.gguf"},
            ["llama_cpp_sycl_server_model holds a % that systemd would expand: write %% for a literal %"],
        ),
        (
            {"llama_cpp_sycl_server_extra_args": "--flash-attn on"},
            ["llama_cpp_sycl_server_extra_args must be a list of strings"],
        ),
        ({"llama_cpp_sycl_server_enabled": False, "llama_cpp_sycl_server_model": ""}, []),
    ],
)
def test_llama_cpp_sycl_names_every_problem(over, expected):
    assert role_inputs.problems("llama_cpp_sycl", {**LLAMA, **over}) == expected


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
        f"installer tarball with `arcops bundle lock {tarball.name} -o LOCK.json` and commit it to the "
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
