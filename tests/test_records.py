"""arcops.records: the record files a stage writes, byte for byte what the roles wrote before
with Ansible's to_nice_json, and the module's stage table is the status summary's."""

import json
import math
from pathlib import Path

import pytest
import yaml
from ansible.plugins.filter.core import to_nice_json
from hypothesis import given
from hypothesis import strategies as st

from arcops import status
from arcops.records import FACT_DIR, STAGES, RecordError, pending, render, targets, write

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
    assert (facts / "arcops_mainline_kernel.fact").read_text() == '{\n    "installed": true\n}\n'
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
    doc = (REPO / "library" / "arcops_record.py").read_text().split('DOCUMENTATION = r"""')[1].split('"""')[0]
    options = yaml.safe_load(doc)["options"]
    assert options["stage"]["choices"] == list(STAGES)
    assert options["fact_dir"]["default"] == FACT_DIR
    assert status.STAGES is STAGES
