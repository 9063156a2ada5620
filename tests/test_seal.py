"""A stage's seal: converged only for the same inputs and the same box; any drift says what."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from arcops.stages import seal, seal_witness
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.ansible_run import needs_ansible, run_module
from .helpers.seal_box import INPUTS, run_play

STATUS = REPO / "tests" / "fixtures" / "dpkg" / "status"


def test_a_fresh_seal_is_converged(box):
    state, _, witness = box
    made = seal.make(INPUTS, witness)
    assert seal.write(str(state), made) is True
    assert seal.write(str(state), made) is False  # same seal: left alone
    assert seal.check(str(state), INPUTS) == []
    w = made["witness"]
    assert sorted(w["files"]) == sorted(
        [witness["files"][0], *(str(p) for p in sorted((box[1] / "fw").glob("*.bin")))]
    )
    assert w["kernel"] == os.uname().release
    assert [g["driver"] for g in w["gpus"]] == ["xe", "xe"]
    assert all(g["guc_loaded"] for g in w["gpus"])


def test_no_seal_or_other_inputs_take_the_full_path(box):
    state, _, witness = box
    assert seal.check(str(state), INPUTS)[0].startswith("no seal in")
    seal.write(str(state), seal.make(INPUTS, witness))
    other = {**INPUTS, "vars": {"intel_stack_guc_version": "70.72.1"}}
    assert seal.check(str(state), other) == [
        "inputs differ from the sealed run: vars.intel_stack_guc_version"
    ]
    assert seal.check(str(state), {**INPUTS, "code": "cd" * 32}) == [
        "inputs differ from the sealed run: code"
    ]
    sealed = json.loads((state / seal.SEAL_FILE).read_text())
    assert "70.60.0" not in json.dumps(sealed["inputs"])  # hashes only, never a value


def test_drift_on_the_box_is_named(box):
    state, etc, witness = box
    seal.write(str(state), seal.make(INPUTS, witness))
    (etc / "pins.pref").write_text("Package: libze1\nPin: version 9*\n")
    (etc / "fw" / "bmg_huc.bin").unlink()
    os.chmod(etc / "fw" / "bmg_guc_70.bin", 0o600)
    reasons = seal.check(str(state), INPUTS)
    assert len(reasons) == 3
    assert any(r.startswith(f"files {etc}/pins.pref: ") for r in reasons)
    assert any(r.startswith(f"files {etc}/fw/bmg_huc.bin: ") and r.endswith("-> missing") for r in reasons)
    assert any("0600" in r for r in reasons if "bmg_guc_70" in r)


def test_a_new_seal_says_what_it_changes(box):
    """A run that re-seals (an idempotence run that is not) names why, never with a value."""
    state, etc, witness = box
    assert seal.changes(str(state), seal.make(INPUTS, witness))[0].startswith("no seal of this version")
    seal.write(str(state), seal.make(INPUTS, witness))
    (etc / "pins.pref").write_text("Package: libze1\nPin: version 9*\n")
    new = seal.make({**INPUTS, "code": "cd" * 32}, witness, {"api_key": "sk-test-0123456789"}, b"k" * 32)
    changes = seal.changes(str(state), new)
    assert changes[:2] == ["inputs differ: code", "secrets differ: api_key"]
    assert any(c.startswith(f"files {etc}/pins.pref: ") for c in changes[2:])
    assert "sk-test" not in json.dumps(changes)


def test_packages_are_read_from_dpkg_status():
    got = seal_witness.read_packages(["adduser", "dash", "intel-opencl-icd", "nope"], str(STATUS))
    assert got == {
        "adduser": "3.134 hold",
        "dash": "0.5.12-2 install",
        "intel-opencl-icd": "not installed",  # removed, config files left
        "nope": "not installed",
    }


def test_units_are_read_with_one_systemctl_call(monkeypatch):
    calls = []

    def fake_run(argv, **kw):
        calls.append(argv)
        out = "Id=a.service\nActiveState=active\nUnitFileState=enabled\n\n"
        out += "Id=b.service\nActiveState=inactive\nUnitFileState=\n"
        return subprocess.CompletedProcess(argv, 0, out, "")

    monkeypatch.setattr(seal_witness.subprocess, "run", fake_run)
    assert seal_witness.read_units(["a.service", "b.service"]) == {
        "a.service": "active enabled",
        "b.service": "inactive -",
    }
    assert len(calls) == 1 and calls[0][:2] == ["systemctl", "show"]


def test_unreachable_engine_is_drift_not_a_crash(tmp_path):
    got = seal_witness.read_containers({"names": ["vllm"], "docker_host": f"unix://{tmp_path}/none.sock"})
    assert got["vllm"].startswith("unreadable")


def test_a_removed_or_foreign_seal_is_no_seal(box):
    state, _, witness = box
    seal.write(str(state), seal.make(INPUTS, witness))
    assert seal.remove(str(state)) is True and seal.remove(str(state)) is False
    state.mkdir(exist_ok=True)
    (state / seal.SEAL_FILE).write_text(json.dumps({"format": 99}))
    assert seal.load(str(state)) is None


@pytest.mark.parametrize(
    "witness, error",
    [
        ([], "witness: must be a mapping"),
        ({"file": []}, "witness: unknown kind(s) file"),
        ({"files": "/etc/x"}, "witness.files: must be a list of names"),
        ({"gpus": True}, "witness.gpus: must be the root"),
    ],
)
def test_bad_witness_specs_are_refused_by_name(witness, error):
    with pytest.raises(seal.SealError, match=error.replace("(", r"\(").replace(")", r"\)")):
        seal.read(witness)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_any_seal_file_reads_as_a_seal_or_none(tmp_path_factory, raw):
    state = tmp_path_factory.mktemp("seal")
    (state / seal.SEAL_FILE).write_bytes(raw)
    reasons = seal.check(str(state), INPUTS)
    assert isinstance(reasons, list) and reasons


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_any_dpkg_status_text_parses(tmp_path_factory, text):
    f = tmp_path_factory.mktemp("dpkg") / "status"
    f.write_text(text, encoding="utf-8")
    got = seal_witness.read_packages(["a", "b"], str(f))
    assert set(got) == {"a", "b"}


def test_inputs_digest_ignores_key_order():
    assert seal.inputs_digest({"a": {"x": 1, "y": 2}}) == seal.inputs_digest({"a": {"y": 2, "x": 1}})
    assert seal.inputs_digest({"a": 1}) != seal.inputs_digest({"a": "1"})
    assert set(seal.inputs_digest({"vars": {"v": 1}, "code": "c"})) == {"vars.v", "code"}


def test_code_hash_lookup_sees_any_change(tmp_path):
    sys.path.insert(0, str(REPO / "plugins" / "lookup"))
    try:
        import arcops_sha256  # an Ansible plugin, not a package module
    finally:
        sys.path.pop(0)
    tree = tmp_path / "roles"
    shutil.copytree(REPO / "roles" / "stage_seal", tree / "stage_seal")
    first = arcops_sha256.tree_sha256([str(tree)])
    (tree / "stage_seal" / "__pycache__").mkdir()
    (tree / "stage_seal" / "__pycache__" / "x.pyc").write_bytes(b"cache")
    assert arcops_sha256.tree_sha256([str(tree)]) == first  # caches do not count
    (tree / "stage_seal" / "tasks" / "check.yml").write_text("---\n")
    assert arcops_sha256.tree_sha256([str(tree)]) != first
    assert arcops_sha256.tree_sha256([str(tmp_path / "none")]) != first


@needs_ansible
def test_module_checks_writes_and_removes(box):
    state, etc, witness = box
    inputs = json.dumps(INPUTS)
    spec = json.dumps(witness)
    base = f"state_dir={state}"
    assert run_module("arcops_seal", f"{base} action=write inputs='{inputs}' witness='{spec}'", check=True)[
        "changed"
    ]
    assert not (state / seal.SEAL_FILE).exists()  # check mode wrote nothing
    assert run_module("arcops_seal", f"{base} action=write inputs='{inputs}' witness='{spec}'")["changed"]
    done = run_module("arcops_seal", f"{base} inputs='{inputs}'")
    assert done["converged"] is True and done["reasons"] == [] and not done["changed"]
    (etc / "pins.pref").unlink()
    drift = run_module("arcops_seal", f"{base} inputs='{inputs}'")
    assert drift["converged"] is False and drift["reasons"][0].endswith("-> missing")
    bad = run_module("arcops_seal", f"{base} action=write inputs='{inputs}' witness='{{\"file\": []}}'")
    assert bad["failed"] and bad["msg"].startswith("witness: unknown kind(s) file")
    assert run_module("arcops_seal", f"{base} action=absent")["changed"]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_any_systemctl_output_parses(text):
    def fake_run(argv, **kw):
        return subprocess.CompletedProcess(argv, 0, text, "")

    original = seal_witness.subprocess.run
    seal_witness.subprocess.run = fake_run
    try:
        got = seal_witness.read_units(["a.service", "b.service"])
    finally:
        seal_witness.subprocess.run = original
    assert set(got) == {"a.service", "b.service"} and all(isinstance(v, str) for v in got.values())


def test_fifos_and_links_are_never_opened(box):
    """A FIFO where a file or the seal should be must not block the check (never a hang)."""
    state, etc, witness = box
    seal.write(str(state), seal.make(INPUTS, witness))
    (etc / "pins.pref").unlink()
    os.mkfifo(etc / "pins.pref")
    reasons = seal.check(str(state), INPUTS)
    assert len(reasons) == 1 and "not a file" in reasons[0]
    fifo_status = etc / "status"
    os.mkfifo(fifo_status)
    assert seal_witness.read_packages(["dash"], str(fifo_status)) == {"dash": "not installed"}
    (state / seal.SEAL_FILE).unlink()
    os.mkfifo(state / seal.SEAL_FILE)
    assert seal.check(str(state), INPUTS)[0].startswith("no seal in")
    assert seal.write(str(state), seal.make(INPUTS, witness)) is True  # replaced, not opened
    (state / seal.SEAL_FILE).unlink()
    (state / seal.SEAL_FILE).symlink_to(etc / "fw" / "bmg_huc.bin")
    assert seal.load(str(state)) is None


def test_a_survey_answers_every_stage_as_the_box_would(box):
    """preflight reads every seal once (survey); each stage's check from it says what check says."""
    states, etc, witness = box
    a, b = states / "intel_stack", states / "vllm_service"
    seal.write(str(a), seal.make(INPUTS, witness))
    seal.write(str(b), seal.make({**INPUTS, "stage": "vllm_service"}, {"files": [str(etc / "pins.pref")]}))
    (states / "notes.txt").write_text("not a stage")  # neither a folder nor a seal: skipped
    surveyed = seal.survey(str(states))
    assert sorted(surveyed["seals"]) == [str(a), str(b)] and surveyed["dir"] == str(states)
    assert seal.covers(surveyed, str(a)) and seal.covers(surveyed, f"{a}/")
    assert not seal.covers(surveyed, "/var/lib/arcops/intel_stack") and not seal.covers({}, str(a))
    assert seal.check_surveyed(surveyed, str(a), INPUTS) == seal.check(str(a), INPUTS) == []
    other = {**INPUTS, "code": "cd" * 32}
    assert seal.check_surveyed(surveyed, str(a), other) == seal.check(str(a), other)
    assert seal.check_surveyed(surveyed, str(states / "llama_cpp_sycl"), INPUTS)[0].startswith("no seal in")
    (etc / "pins.pref").write_text("edited by hand\n")
    again = seal.survey(str(states))
    for state, inputs in ((a, INPUTS), (b, {**INPUTS, "stage": "vllm_service"})):
        reasons = seal.check_surveyed(again, str(state), inputs)
        assert reasons == seal.check(str(state), inputs) and reasons[0].startswith(f"files {etc}/pins.pref: ")
    assert seal.survey(str(states / "none")) == {"dir": str(states / "none"), "seals": {}}


@needs_ansible
def test_the_action_plugin_answers_from_the_survey_on_the_control_node(box, tmp_path):
    """Inputs templated on the control node hash as the module hashed them on the box (the same
    seal reads converged both ways); a survey that does not cover the folder reads the box."""
    states, etc, witness = box
    state = states / "intel_stack"

    def run(action="check", **extra):
        args = {"state_dir": str(state), "action": action, "witness": witness, **extra}
        return run_play(tmp_path, args)[0]

    assert run("write")["changed"] is True
    surveyed = seal.survey(str(states))
    from_survey = run(surveyed=surveyed)
    assert (from_survey["source"], from_survey["converged"], from_survey["changed"]) == (
        "survey",
        True,
        False,
    ), from_survey["reasons"]
    changed = run(surveyed=surveyed, extra={"vars": {"deep": {"a": [1, {"b": 3}]}}})
    assert changed["source"] == "survey" and changed["reasons"] == [
        "inputs differ from the sealed run: vars.deep"
    ]
    elsewhere = run(surveyed={"dir": "/elsewhere", "seals": {}})
    assert (elsewhere["source"], elsewhere["converged"]) == ("box", True)
    (etc / "pins.pref").unlink()
    drift = run(surveyed=seal.survey(str(states)))
    assert drift["source"] == "survey" and drift["reasons"][0].endswith("-> missing")
    # Not converged: the stage will change the box, so the run's survey is dropped (a fact).
    assert drift["ansible_facts"] == {"stage_seal_survey": {}}
    assert "ansible_facts" not in from_survey
    full = run(surveyed=surveyed, full_run=True)
    assert (full["converged"], full["reasons"], full["source"]) == (
        False,
        ["arcops_full_run is true"],
        "none",
    )
    assert full["ansible_facts"] == {"stage_seal_survey": {}}
    bad = run(surveyed=["not", "a", "survey"])
    assert bad["failed"] and bad["msg"] == "surveyed: must be a survey (a mapping) or omitted"
