"""Stack releases (arcops.fleet.release, known_stacks): a real synthetic bundle and its lock, the
roles' own checks, known-bad stacks from the project's file and the inventory's, the CLI."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from arcops.cli import main
from arcops.common.checksum import sha256_file
from arcops.fleet import known_stacks, release
from arcops.kernel import bundle
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .helpers.bundle_builder import build_bundle

DIGEST = "sha256:" + "ab" * 32
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """Two real synthetic bundles (GuC 70.60.0 and 70.72.1) and their locks."""
    out = {}
    for guc in ("70.60.0", "70.72.1"):
        folder = tmp_path_factory.mktemp(f"bundle-{guc}")
        tarball = build_bundle(folder, guc=guc)
        lock = folder / "bundle.lock.json"
        lock.write_text(json.dumps(bundle.make_lock(tarball, "server")))
        out[guc] = (tarball, lock)
    return out


def write_release(folder: Path, bundles, guc="70.60.0", **changes) -> Path:
    """An inventory folder with stack.yml (and the lock beside it); CHANGES replace sections."""
    tarball, lock = bundles[guc]
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(lock, folder / "bundle.lock.json")
    data = {
        "format": 1,
        "release": "2026.12.1",
        "description": "dual B60, graph_mtp",
        "intel_stack": {
            "bundle": str(tarball),
            "lock": {"path": "bundle.lock.json", "sha256": sha256_file(lock)},
            "installer_version": "26.18.8.2",
            "kernel_release": "6.17.0-1009-intel",
            "guc_version": guc,
        },
        "vllm": {
            "image": "intel/llm-scaler-vllm:0.26.0-b2",
            "image_digest": DIGEST,
            "profile": "graph_mtp",
            "settings": {"model_dir": "/srv/models", "model": "qwen38-fp8", "max_num_seqs": 8},
        },
    }
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = folder / release.FILE_NAME
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(release.ReleaseError) as e:
        release.load(str(path))
    return e.value.problems


def test_a_release_becomes_the_variables_the_roles_read(tmp_path, bundles):
    path = write_release(tmp_path / "prod", bundles)
    found = release.load(str(path))
    v = found["vars"]
    assert found["id"] == "2026.12.1" and found["file"] == str(path)
    assert v["arcops_stack_bundle"] == str(bundles["70.60.0"][0])
    assert v["arcops_stack_lock"] == str(tmp_path / "prod" / "bundle.lock.json")  # relative to the release
    assert v["arcops_stack"] == {
        "installer_version": "26.18.8.2",
        "kernel_release": "6.17.0-1009-intel",
        "guc_version": "70.60.0",
    }
    assert (v["arcops_vllm_service"], v["vllm_service_image"], v["vllm_service_image_digest"]) == (
        True,
        "intel/llm-scaler-vllm:0.26.0-b2",
        DIGEST,
    )
    assert (v["vllm_service_model"], v["vllm_service_max_num_seqs"], v["arcops_vllm_profile"]) == (
        "qwen38-fp8",
        8,
        "graph_mtp",
    )
    # Sections left out switch their stage off: a release names everything a box runs.
    assert (v["arcops_llama_cpp_sycl"], v["arcops_mainline_kernel"]) == (False, {})
    assert found["known"] == []


def test_every_role_variable_the_release_sets_is_one_a_role_declares():
    """ROLE_VARS and SWITCHES name variables the roles' argument specs or defaults know."""
    from arcops.stages.user_vars import load_yaml_lenient, roles_variables

    declared = {
        name for names in roles_variables(Path("roles"), load_yaml_lenient).values() for name in names
    }
    shared = {"arcops_stack_bundle", "arcops_stack_lock", "arcops_stack", "arcops_mainline_kernel"}
    shared |= {"arcops_llama_cpp_sycl", "arcops_vllm_service", "arcops_vllm_profile"}
    for var in [*release.ROLE_VARS.values(), *(v for v, _ in release.SWITCHES.values())]:
        name = var.split(".")[0]
        assert name in declared or name in shared, name


def test_shape_problems_are_all_named_at_once(tmp_path, bundles):
    path = write_release(
        tmp_path,
        bundles,
        release=2026.12,
        vllm={"image": "intel/llm-scaler-vllm:0.26.0-b2", "imag_digest": DIGEST, "settings": {"port": 8001}},
        llama_cpp=["not a mapping"],
        kernels={},
    )
    found = problems(path)
    assert "release: must be an id of dotted numbers, e.g. 2026.12.1 (got 2026.12; quote it)" in found
    assert "vllm.imag_digest: unknown key (did you mean image_digest?)" in found
    assert "vllm.settings.port: a box's own setting: set vllm_service_port in the inventory" in found
    assert "llama_cpp: must be a mapping (leave the section out to not run it)" in found
    assert any(p.startswith("kernels: unknown key") for p in found)


def test_files_that_differ_from_their_sha256_are_refused(tmp_path, bundles):
    path = write_release(tmp_path, bundles)
    lock = tmp_path / "bundle.lock.json"
    lock.write_text(lock.read_text().replace("6.17.0-1009-intel", "6.17.0-1010-intel"))
    found = problems(path)
    assert any(p.startswith(f"{lock}: sha256 ") and "differs from the release's" in p for p in found)
    # A lock that still matches its sha256 but pins another kernel than the release: the role's check.
    data = yaml.safe_load(path.read_text())
    data["intel_stack"]["lock"]["sha256"] = sha256_file(lock)
    path.write_text(yaml.safe_dump(data))
    assert any("pins kernel 6.17.0-1010-intel" in p for p in problems(path))


def test_a_bundle_other_than_the_locked_one_is_refused(tmp_path, bundles):
    tarball = tmp_path / "copy.tar.xz"
    tarball.write_bytes(bundles["70.60.0"][0].read_bytes() + b"\0")
    path = write_release(tmp_path / "inv", bundles)
    data = yaml.safe_load(path.read_text())
    data["intel_stack"]["bundle"] = str(tarball)
    path.write_text(yaml.safe_dump(data))
    assert any(p.startswith(f"{tarball}: sha256 ") and "differs from the lock" in p for p in problems(path))


def test_the_vllm_spec_checks_speak_the_release_s_names(tmp_path, bundles):
    vllm = {
        "image": "intel/llm-scaler-vllm:0.26.0-b2",
        "settings": {"model_dir": "/srv/models", "model": "m", "extra_env": {"CCL_ALLREDUCE": "ring"}},
    }
    found = problems(write_release(tmp_path, bundles, vllm=vllm))
    assert any(p.startswith("vllm.image_digest must be sha256:<64 hex>") for p in found)
    assert any(p.startswith("vllm: ") and "CCL_ALLREDUCE" in p for p in found)


def test_a_known_bad_stack_is_refused_with_its_evidence_unless_overridden(tmp_path, bundles):
    vllm = {
        "image": "intel/llm-scaler-vllm:0.26.0-b1",
        "image_digest": DIGEST,
        "settings": {"model_dir": "/m", "model": "x"},
    }
    path = write_release(tmp_path, bundles, vllm=vllm)
    (found,) = problems(path)
    assert found.startswith("matches the known-bad stack llm-scaler-0.26.0-b1: dual B60: wrong output")
    path = write_release(tmp_path, bundles, vllm=vllm, known_bad_overrides=["llm-scaler-0.26.0-b1"])
    assert release.load(str(path))["known"][0].startswith("llm-scaler-0.26.0-b1 (overridden): ")
    path = write_release(tmp_path, bundles, vllm=vllm, known_bad_overrides=["llm-scaler-0.26.0-b1", "typo"])
    assert problems(path) == ["known_bad_overrides: typo is no known-bad entry"]


def test_a_stack_seen_fine_is_shown_and_the_lock_feeds_the_runtime_facts(tmp_path, bundles):
    path = write_release(tmp_path, bundles, guc="70.72.1")
    assert release.load(str(path))["known"] == [
        "guc-70.72.1 (fine): dual B60, GuC 70.72.1 instead of 70.60.0 - "
        "73.4 tok/s against 73.7, 3 starts, no hangs."
    ]
    lock = json.loads((tmp_path / "bundle.lock.json").read_text())
    found = known_stacks.facts(yaml.safe_load(path.read_text()), lock)
    assert found["compute_runtime"] == "25.48.36300.8-1~24.04" and found["igc"] == "2.24.8-1~24.04"


def test_the_inventory_adds_its_own_known_stacks(tmp_path, bundles):
    path = write_release(tmp_path, bundles)
    user = tmp_path / known_stacks.USER_FILE
    entry = {"name": "our-igc", "verdict": "bad", "match": {"igc": "2.24.*"}, "evidence": "slow prefill here"}
    user.write_text(yaml.safe_dump({"format": 1, "entries": [entry]}))
    assert problems(path) == [
        "matches the known-bad stack our-igc: slow prefill here "
        "(name it in known_bad_overrides to deploy it anyway)"
    ]
    user.write_text(yaml.safe_dump({"format": 1, "entries": [{**entry, "name": "guc-70.72.1"}]}))
    assert problems(path) == ["guc-70.72.1: also a project entry; give yours another name"]
    user.write_text(
        yaml.safe_dump({"format": 1, "entries": [{"name": "x", "verdict": "meh", "match": {"gpu": "b70"}}]})
    )
    found = problems(path)
    assert f'{user}: x: verdict must be bad or fine (got "meh")' in found
    assert any(p.startswith(f'{user}: x: match key "gpu" is not one of image, kernel') for p in found)


def test_the_project_s_known_stacks_file_loads_and_covers_the_field_report():
    data = yaml.safe_load(Path(known_stacks.PROJECT_FILE).read_text())
    names = {e["name"] for e in known_stacks.check(data, "project")}
    assert {"llm-scaler-0.26.0-b1", "mainline-7.2.6-stock-image", "mainline-7.3-rc3"} <= names
    assert {"compute-runtime-26.35-igc-2.41.5", "ccl-allreduce-ring", "guc-70.72.1"} <= names


@pytest.mark.parametrize(
    ("kernel", "image", "bad"),
    [
        ("7.2.6-070206-generic", "intel/llm-scaler-vllm:0.26.0-b2", ["mainline-7.2.6-stock-image"]),
        ("7.2.6-070206-generic", "myorg/vllm-xpu:7.2", []),
        ("7.3.0-070300rc3-generic", "x:y", ["mainline-7.3-rc3"]),
        ("7.3.0-070300-generic", "x:y", []),
    ],
)
def test_mainline_kernel_entries_match_ubuntu_s_release_names(kernel, image, bad):
    entries = known_stacks.check(yaml.safe_load(Path(known_stacks.PROJECT_FILE).read_text()), "project")
    found = known_stacks.facts({"mainline_kernel": {"release": kernel}, "vllm": {"image": image}})
    assert [e["name"] for e in known_stacks.matches(found, entries)] == bad


def test_cli_check_prints_the_variables_or_every_problem(tmp_path, bundles, capsys):
    path = write_release(tmp_path, bundles)
    assert main(["fleet", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"release 2026.12.1 ({path})") and "vllm_service_image_digest" in out
    assert main(["fleet", "check", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["vars"]["arcops_llama_cpp_sycl"] is False
    path.write_text("format: 1\nrelease: '1'\nvllm: {image: x}\nbogus: 1\n")
    assert main(["fleet", "check", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert f"arcops fleet check: {path}: vllm.settings: required" in err
    assert any(line.startswith(f"arcops fleet check: {path}: bogus: unknown key") for line in err)
    for text in ("[1, 2", "- a list\n", ""):
        path.write_text(text)
        assert main(["fleet", "check", str(path)]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"arcops fleet check: {path}")
    assert main(["fleet", "check", str(tmp_path / "missing.yml")]) == 2
    assert "cannot read" in capsys.readouterr().err


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
_SECTION = st.fixed_dictionaries(
    {}, optional={k: _VALUES for k in ("image", "settings", "version", "lock", "release", "packages")}
)


@settings(max_examples=150, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "format": st.sampled_from([1, 2, "1"]),
            "release": st.sampled_from(["1", "2026.12.1", 1.5, "", "x"]),
            "known_bad_overrides": _VALUES,
            **{s: _SECTION | _VALUES for s in release.SECTIONS},
            "extra": _VALUES,
        },
    )
)
@example({"release": "1", "format": 1, "vllm": {"\n": None}})  # a key with a newline: a two-line problem
def test_any_release_data_is_refused_or_read_never_raises_else(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / release.FILE_NAME
    try:
        release.check(data, str(path))
    except release.ReleaseError as e:
        assert e.problems and all(isinstance(p, str) and "\n" not in p for p in e.problems)


@given(_VALUES)
@example({"\r0": None})  # an unknown key with a carriage return: a problem on two lines
def test_any_known_stacks_data_is_refused_or_read(data):
    try:
        known_stacks.check({"format": 1, "entries": data if isinstance(data, list) else [data]}, "f")
    except known_stacks.KnownStacksError as e:
        assert all(line.startswith("f: ") for line in str(e).splitlines())


def inventory(tmp_path, bundles) -> Path:
    """An inventory of three boxes in canary and fleet, with group_vars and host_vars that set
    some of the same variables as its stack.yml."""
    inv = tmp_path / "prod"
    write_release(inv, bundles)
    (inv / "hosts.yml").write_text(
        yaml.safe_dump(
            {
                "all": {
                    "children": {
                        "arc_servers": {
                            "children": {
                                "canary": {"hosts": {"arc-01": None}},
                                "fleet": {"hosts": {"arc-02": None, "arc-03": None}},
                            }
                        }
                    }
                }
            }
        )
    )
    (inv / "group_vars").mkdir()
    (inv / "group_vars" / "arc_servers.yml").write_text(
        "vllm_service_image: intel/llm-scaler-vllm:0.25.0\n"
        "vllm_service_max_num_seqs: 4\nvllm_service_port: 8000\n"
    )
    (inv / "host_vars").mkdir()
    (inv / "host_vars" / "arc-02.yml").write_text("vllm_service_port: 8001\n")
    return inv


def ansible_inventory(inv: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(inv), "--list"],
        cwd=REPO,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")},
        capture_output=True,
        text=True,
    )


def test_the_vars_plugin_pins_every_box_from_the_release(tmp_path, bundles):
    """Through real ansible-inventory: the release outranks group_vars/arc_servers.yml; a box's
    host_vars keep what is its own."""
    run = ansible_inventory(inventory(tmp_path, bundles))
    assert run.returncode == 0 and "[WARNING]" not in run.stderr, run.stderr
    # Values that are not templates (a release is data) come marked so; the plain value inside.
    hostvars = json.loads(run.stdout, object_hook=lambda d: d.get("__ansible_unsafe", d))["_meta"]["hostvars"]
    for host in ("arc-01", "arc-02", "arc-03"):
        v = hostvars[host]
        assert v["arcops_release"]["id"] == "2026.12.1"
        assert (v["vllm_service_image"], v["vllm_service_max_num_seqs"]) == (
            "intel/llm-scaler-vllm:0.26.0-b2",
            8,
        )
        assert v["arcops_llama_cpp_sycl"] is False
    assert [hostvars[h]["vllm_service_port"] for h in ("arc-01", "arc-02")] == [8000, 8001]


def test_a_refused_release_stops_the_inventory_with_every_problem(tmp_path, bundles):
    inv = inventory(tmp_path, bundles)
    text = (inv / release.FILE_NAME).read_text()
    (inv / release.FILE_NAME).write_text(text.replace("0.26.0-b2", "0.26.0-b1"))
    run = ansible_inventory(inv)
    assert run.returncode != 0 and "[WARNING]" not in run.stderr  # stack.yml is not parsed as hosts
    assert f"stack release {inv / release.FILE_NAME}:" in run.stderr
    assert "- matches the known-bad stack llm-scaler-0.26.0-b1: dual B60: wrong output" in run.stderr
    (inv / release.FILE_NAME).write_text(
        text.replace("graph_mtp", "graf").replace("max_num_seqs", "max_seqs")
    )
    run = ansible_inventory(inv)
    assert "- vllm.settings.max_seqs: unknown key (did you mean max_num_seqs?)" in run.stderr


def test_the_example_inventory_s_release_has_the_shape_of_one():
    """Its files are placeholders (/srv/arcops/...): the shape is what can be checked here."""
    data = yaml.safe_load(Path("inventories/example/stack.yml.example").read_text())
    assert release._shape(data) == []
    assert set(data) <= set(release.TOP) and data["release"] == "2026.12.1"


def test_the_vars_plugin_looks_for_the_release_s_file_name():
    plugin = (REPO / "plugins/vars/arcops_release.py").read_text()
    assert f'FILE_NAME = "{release.FILE_NAME}"' in plugin


def test_ansible_doc_renders_the_vars_plugin():
    doc = Path(sys.executable).parent / "ansible-doc"
    run = subprocess.run(
        [str(doc), "-t", "vars", "--json", "arcops.arc.arcops_release"],
        cwd=REPO,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0 and "[ERROR]" not in run.stderr, run.stderr
    assert "stack.yml" in json.loads(run.stdout)["arcops.arc.arcops_release"]["doc"]["description"][0]
