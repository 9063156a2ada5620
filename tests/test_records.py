"""arcops.common.records: the record files a stage writes, byte for byte what the roles wrote before
with Ansible's to_nice_json, and the module's stage table is the status summary's."""

import json
import math
import os
from pathlib import Path

import pytest
import yaml
from ansible.plugins.filter.core import to_nice_json
from arcops.common.records import (
    FACT_DIR,
    HISTORY_DIR,
    SCHEMA,
    STAGES,
    RecordError,
    pending,
    read,
    read_published,
    render,
    store,
    targets,
    upgrade,
    write,
)
from arcops.stages import status
from hypothesis import given
from hypothesis import strategies as st

from .helpers.ansible_run import needs_ansible, run_module

REPO = Path(__file__).resolve().parent.parent
RECORDS = Path(__file__).parent / "fixtures" / "records" / "lab-box"

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), _JSON, max_size=6))
def test_render_is_to_nice_json(record):
    assert render(record) == to_nice_json(record) + "\n"


@pytest.mark.parametrize("path", sorted(RECORDS.glob("*.fact")), ids=lambda p: p.name)
def test_records_from_a_converged_box_render_unchanged(path):
    """A box converged before arcops_record keeps its files: no change on the next run. Only
    intel_stack's used to end without a newline: it is rewritten once, with the same record."""
    text = path.read_text()
    want = text + "\n" if path.name == "arcops_intel_stack.fact" and not text.endswith("\n") else text
    assert render(json.loads(text)) == want


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ([1, 2], "record: must be a mapping, got list"),
        ({"x": math.nan}, "record: not JSON (Out of range float values are not JSON compliant"),
        ({"x": {1, 2}}, "record: not JSON (Object of type set is not JSON serializable)"),
    ],
)
def test_render_refuses(record, message):
    with pytest.raises(RecordError) as e:
        render(record)
    assert str(e.value).startswith(message)


def test_targets_and_unknown_stage(tmp_path):
    assert targets("intel_stack", str(tmp_path / "s"), str(tmp_path / "f")) == [
        tmp_path / "s" / "state.json",
        tmp_path / "f" / "arcops_intel_stack.fact",
    ]
    assert targets("preflight", None, str(tmp_path)) == [tmp_path / "arcops.fact"]
    with pytest.raises(RecordError, match="stage: 'nope' is not one of preflight, intel_stack"):
        targets("nope", None)


def test_write_then_nothing_pending(tmp_path):
    state, facts = tmp_path / "var/lib/arcops/x", tmp_path / "facts.d"
    text, stale = pending("mainline_kernel", {"installed": True}, str(state), str(facts))
    assert stale == [state / "state.json", facts / "arcops_mainline_kernel.fact"]
    write(text, stale)
    assert json.loads((facts / "arcops_mainline_kernel.fact").read_text()) == {
        "installed": True,
        "schema": SCHEMA,
        "stage": "mainline_kernel",
    }
    assert pending("mainline_kernel", {"installed": True}, str(state), str(facts))[1] == []
    # One copy edited by hand: only that one is rewritten.
    (state / "state.json").write_text("{}")
    assert pending("mainline_kernel", {"installed": True}, str(state), str(facts))[1] == [
        state / "state.json"
    ]


def test_link_or_folder_in_the_way_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("keep")
    (tmp_path / "arcops.fact").symlink_to(outside)
    with pytest.raises(RecordError, match="is a link or a folder"):
        pending("preflight", {}, None, str(tmp_path))
    assert outside.read_text() == "keep"


def test_module_choices_and_status_read_the_same_table():
    doc = (
        (REPO / "plugins" / "modules" / "arcops_record.py")
        .read_text()
        .split('DOCUMENTATION = r"""')[1]
        .split('"""')[0]
    )
    options = yaml.safe_load(doc)["options"]
    assert options["stage"]["choices"] == list(STAGES)
    assert options["fact_dir"]["default"] == FACT_DIR
    assert status.STAGES is STAGES


def test_store_keeps_each_new_record_in_the_history(tmp_path):
    state, facts = tmp_path / "state", tmp_path / "facts"
    for n in range(5):
        assert store("vllm_service", {"n": n}, str(state), str(facts), history=3)
        # The same record again: nothing written, no history entry.
        assert store("vllm_service", {"n": n}, str(state), str(facts), history=3) == []
    kept = sorted((state / HISTORY_DIR).iterdir())
    stamp = {"schema": SCHEMA, "stage": "vllm_service"}
    assert [json.loads(p.read_text()) for p in kept] == [{"n": n, **stamp} for n in (2, 3, 4)]
    assert read("vllm_service", str(state)) == {"n": 4, **stamp}


def test_an_unpublished_record_writes_state_json_only(tmp_path):
    state, facts = tmp_path / "state", tmp_path / "facts"
    assert store("intel_stack", {"installed": False}, str(state), None) == [state / "state.json"]
    assert not facts.exists()
    assert store("intel_stack", {"installed": False}, str(state), None, dry_run=True) == []
    assert store("intel_stack", {"installed": True}, str(state), str(facts), dry_run=True) == [
        state / "state.json",
        facts / "arcops_intel_stack.fact",
    ]
    assert read("intel_stack", str(state)) == {"installed": False, "schema": SCHEMA, "stage": "intel_stack"}


@pytest.mark.parametrize("text", ["", "[1]", "{", "null", "\xff"])
def test_a_damaged_record_is_refused_by_path(tmp_path, text):
    (tmp_path / "state.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(RecordError, match=f"^{tmp_path}/state.json: "):
        read("intel_stack", str(tmp_path))


def test_no_record_reads_as_none(tmp_path):
    assert read("intel_stack", str(tmp_path / "never")) is None


@needs_ansible
def test_the_module_reads_writes_and_refuses(tmp_path):
    state, facts = tmp_path / "state", tmp_path / "facts"
    args = f"stage=mainline_kernel action=read state_dir={state}"
    first = run_module("arcops_record", args)
    assert (first["changed"], first["record"], first["exists"]) == (False, {}, False)
    missing = run_module("arcops_record", args + " required=true")
    assert (
        missing["failed"]
        and missing["msg"] == f"{state}: no mainline_kernel record here (it never installed on this box)"
    )
    wrote = run_module(
        "arcops_record",
        json.dumps(
            {
                "stage": "mainline_kernel",
                "record": {"installed": True},
                "state_dir": str(state),
                "fact_dir": str(facts),
            }
        ),
    )
    assert wrote["changed"] and len(list((state / HISTORY_DIR).iterdir())) == 1
    again = run_module("arcops_record", args + " required=true")
    assert (again["changed"], again["exists"]) == (False, True)
    assert again["record"] == {"installed": True, "schema": SCHEMA, "stage": "mainline_kernel"}


def test_a_fifo_in_place_of_a_record_is_refused_never_read(tmp_path):
    """Reading a FIFO would hang the module (and the play): it is refused by its path."""
    os.mkfifo(tmp_path / "state.json")
    with pytest.raises(RecordError, match=r"state\.json: not a regular file"):
        read("intel_stack", str(tmp_path))
    with pytest.raises(RecordError, match=r"state\.json: not a regular file"):
        pending("intel_stack", {}, str(tmp_path), None)


def test_records_are_root_s_alone_and_reach_the_disk_before_the_rename(tmp_path, monkeypatch):
    """state.json, its history and the fact are 0600 in 0700 folders, whatever the umask; a folder
    an older version made 0755 is closed; each file is fsynced before its rename, and the folder
    after it."""
    from arcops.common import outputs

    synced: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(
        os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd))
    )
    old = os.umask(0)
    try:
        state, facts = tmp_path / "state", tmp_path / "facts"
        state.mkdir(mode=0o755)
        store("vllm_service", {"n": 1}, str(state), str(facts))
    finally:
        os.umask(old)
    history = next((state / HISTORY_DIR).iterdir())
    for path in (state / "state.json", facts / "arcops_vllm_service.fact", history):
        assert os.stat(path).st_mode & 0o777 == outputs.PRIVATE_FILE, path
    for folder in (state, state / HISTORY_DIR):
        assert os.stat(folder).st_mode & 0o777 == outputs.PRIVATE_DIR, folder
    # A file is synced under its temporary name (before the rename), then its folder.
    assert any(p.startswith(str(state / ".state.json.")) for p in synced)
    assert str(state) in synced and str(facts) in synced
    # private_dir closes the folders from TOP down to the one asked for, nothing above TOP.
    os.chmod(tmp_path, 0o755)
    top = tmp_path / "top"
    (top / "a").mkdir(parents=True, mode=0o755)
    os.chmod(top, 0o755)
    outputs.private_dir(top / "a" / "b" / "c", top=top)
    assert all(
        os.stat(p).st_mode & 0o777 == 0o700 for p in (top, top / "a", top / "a" / "b", top / "a" / "b" / "c")
    )
    assert os.stat(tmp_path).st_mode & 0o777 == 0o755  # above TOP: untouched


def test_a_record_an_older_version_left_readable_is_rewritten_private(tmp_path):
    state, facts = tmp_path / "state", tmp_path / "facts"
    store("vllm_service", {"n": 1}, str(state), str(facts))
    (facts / "arcops_vllm_service.fact").chmod(0o644)
    assert store("vllm_service", {"n": 1}, str(state), str(facts)) == [facts / "arcops_vllm_service.fact"]
    assert os.stat(facts / "arcops_vllm_service.fact").st_mode & 0o777 == 0o600


def test_records_of_arcops_1_0_are_read_in_this_shape():
    """Format 0 had no schema field, preflight's fields under "preflight" and vllm_service's
    earlier deployment under "previous" (read by nothing): both come back in this shape."""
    old = json.loads((RECORDS / "arcops.fact").read_text())
    pf = upgrade("preflight", old, "arcops.fact")
    assert pf == {**old["preflight"], "schema": SCHEMA, "stage": "preflight"}
    vllm = upgrade("vllm_service", {"spec_hash": "a", "previous": {"spec_hash": "b"}}, "x")
    assert vllm == {"spec_hash": "a", "schema": SCHEMA, "stage": "vllm_service"}
    assert upgrade("intel_stack", {"installed": True}, "x")["stage"] == "intel_stack"
    # What this version writes reads back unchanged.
    assert upgrade("vllm_service", vllm, "x") == vllm


@pytest.mark.parametrize(
    ("stage", "data", "message"),
    [
        ("intel_stack", {"schema": 2}, "r: written by a later arcops (record format 2; this one reads 1)"),
        ("intel_stack", {"schema": "1", "stage": "intel_stack"}, "schema: must be int, got str"),
        ("intel_stack", {"schema": 1}, "r: not a intel_stack record (no stage field)"),
        ("intel_stack", {"schema": 1, "stage": "verify"}, "stage: 'verify' in a record of intel_stack"),
        ("intel_stack", {"installed": "yes"}, "installed: must be bool, got str"),
        ("intel_stack", {"previous": [1]}, "previous: must be dict, got list"),
        ("mainline_kernel", {"installed": 1}, "installed: must be bool, got int"),
        ("verify", [], "r: not a JSON object"),
    ],
)
def test_a_record_of_the_wrong_shape_is_refused_by_field(stage, data, message):
    with pytest.raises(RecordError) as e:
        upgrade(stage, data, "r")
    assert message in str(e.value)


def test_a_record_of_the_wrong_shape_is_not_written(tmp_path):
    with pytest.raises(RecordError, match="record of intel_stack: target: must be dict, got str"):
        store("intel_stack", {"target": "6.17"}, str(tmp_path), None)
    with pytest.raises(RecordError, match="stage: 'verify' in a record of intel_stack"):
        store("intel_stack", {"stage": "verify"}, str(tmp_path), None)
    assert not any(tmp_path.iterdir())


def test_published_records_are_read_in_this_shape_or_say_why_not(tmp_path):
    (tmp_path / "arcops_intel_stack.fact").write_text('{"installed": true, "schema": 9}')
    (tmp_path / "arcops_mainline_kernel.fact").write_text("{")
    (tmp_path / "arcops_vllm_service.fact").write_text('{"spec_hash": "a", "previous": {}}')
    got = read_published(tmp_path)
    assert got["preflight"] is None
    assert "written by a later arcops (record format 9" in got["intel_stack"]
    assert got["mainline_kernel"].startswith(f"record {tmp_path}/arcops_mainline_kernel.fact: not JSON")
    assert got["vllm_service"] == {"spec_hash": "a", "schema": SCHEMA, "stage": "vllm_service"}


@given(_JSON)
def test_any_json_is_read_as_a_record_or_refused_by_name(data):
    try:
        got = upgrade("llama_cpp_sycl", data, "r")
    except RecordError as e:
        assert str(e).startswith("r: ")
    else:
        assert got["schema"] == SCHEMA and got["stage"] == "llama_cpp_sycl"
