"""Whether the verify stage's last verdict still holds (arcops.prove.verify_fresh): the digest of
what it rests on, the stamp of the last ask, and the rule that joins them. The role's use of it,
through a real ansible-playbook, is in tests/test_verify_role.py."""

import json
import os

import pytest
from arcops.prove import verify_fresh
from arcops.prove.verify_fresh import basis, read_stamp, still_holds, write_stamp
from hypothesis import given
from hypothesis import strategies as st

from .helpers.fuzz import FUZZ

RECORDS = {"vllm_service": {"spec_hash": "a", "endpoint": {"url": "http://127.0.0.1:8000"}}, "verify": None}
INPUTS = {"prompts": None, "goldens": [], "rests_on": {"release": "2026.12.1"}}
NOW = 1_800_000_000.0


def held(digest):
    """A passed record and a stamp of an ask ten seconds ago, both on DIGEST."""
    return {"passed": True, "basis": digest}, {"basis": digest, "asked_at": NOW - 10, "passed": True}


def test_the_digest_covers_every_other_record_the_inputs_and_the_boot():
    digest = basis(RECORDS, INPUTS, "boot-1")
    assert digest == basis(dict(reversed(list(RECORDS.items()))), INPUTS, "boot-1")  # order is no change
    assert digest == basis({**RECORDS, "verify": {"passed": False}}, INPUTS, "boot-1")  # its own is not
    new_spec = {**RECORDS, "vllm_service": {**RECORDS["vllm_service"], "spec_hash": "b"}}
    assert digest != basis(new_spec, INPUTS, "boot-1")
    assert digest != basis({**RECORDS, "intel_stack": {"target": {"guc": "70.60.0"}}}, INPUTS, "boot-1")
    assert digest != basis(RECORDS, {**INPUTS, "rests_on": {"release": "2026.12.2"}}, "boot-1")
    assert digest != basis(RECORDS, INPUTS, "boot-2")


def test_a_passed_verdict_holds_on_its_basis_within_the_interval():
    digest = basis(RECORDS, INPUTS, "boot-1")
    last, stamp = held(digest)
    why = still_holds(last, stamp, digest, NOW, 86400)
    assert why.startswith("not asked again: the services passed 10 s ago") and "86400 s" in why


@pytest.mark.parametrize(
    ("last", "stamp", "reask_after"),
    [
        ({"passed": True, "basis": "d"}, {"basis": "d", "asked_at": NOW - 10, "passed": True}, 0),  # off
        ({"passed": False, "basis": "d"}, {"basis": "d", "asked_at": NOW - 10, "passed": True}, 60),
        ({"passed": True, "basis": "e"}, {"basis": "d", "asked_at": NOW - 10, "passed": True}, 60),
        ({"passed": True, "basis": "d"}, {"basis": "e", "asked_at": NOW - 10, "passed": True}, 60),
        ({"passed": True, "basis": "d"}, {"basis": "d", "asked_at": NOW - 10, "passed": False}, 60),
        ({"passed": True, "basis": "d"}, {"basis": "d", "asked_at": NOW - 60, "passed": True}, 60),  # old
        ({"passed": True, "basis": "d"}, {"basis": "d", "asked_at": NOW + 3600, "passed": True}, 60),  # clock
        ({"passed": True, "basis": "d"}, {"basis": "d", "asked_at": "yesterday", "passed": True}, 60),
        ({"passed": True, "basis": "d"}, {"basis": "d", "asked_at": float("nan"), "passed": True}, 60),
        ({"passed": True, "basis": "d"}, {"basis": "d", "asked_at": True, "passed": True}, 60),
        ({"passed": True, "basis": "d"}, None, 60),  # an earlier arcops kept no stamp
        (None, {"basis": "d", "asked_at": NOW - 10, "passed": True}, 60),
        ("record: not JSON", {"basis": "d", "asked_at": NOW - 10, "passed": True}, 60),
    ],
)
def test_anything_else_asks_again(last, stamp, reask_after):
    assert still_holds(last, stamp, "d", NOW, reask_after) is None


def test_the_stamp_is_private_and_anything_that_is_no_stamp_reads_as_none(tmp_path):
    state = tmp_path / "verify"
    assert read_stamp(str(state)) is None
    write_stamp(str(state), "d", True, NOW)
    assert read_stamp(str(state)) == {"basis": "d", "asked_at": NOW, "passed": True}
    path = state / verify_fresh.STAMP
    assert path.stat().st_mode & 0o777 == 0o600 and state.stat().st_mode & 0o777 == 0o700
    for text in ("", "{", "[1, 2]", "null", "x" * (verify_fresh.STAMP_MAX + 1), "[" * 100_000):
        path.write_text(text)
        assert read_stamp(str(state)) is None, text[:20]
    path.unlink()
    os.symlink(tmp_path / "elsewhere.json", path)
    (tmp_path / "elsewhere.json").write_text(json.dumps({"basis": "d", "asked_at": NOW, "passed": True}))
    assert read_stamp(str(state)) is None  # a link is not followed


def test_the_boot_id_is_the_kernels_or_empty(tmp_path):
    from arcops.box import host

    assert host.boot_id(tmp_path / "none") == ""
    (tmp_path / "id").write_text("0f6f8a2c-9f0e-4a55-9a53-8c2f1a8f3b11\n")
    assert host.boot_id(tmp_path / "id") == "0f6f8a2c-9f0e-4a55-9a53-8c2f1a8f3b11"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(last=JSON, stamp=JSON, reask=st.floats(min_value=0, max_value=1e7))
def test_any_record_and_stamp_either_hold_with_a_line_or_ask(last, stamp, reask):
    stamp = stamp if isinstance(stamp, dict) else None
    why = still_holds(last, stamp, "d", NOW, reask)
    assert why is None or (why.startswith("not asked again") and "\n" not in why)
    if why:
        assert last["passed"] is True and last["basis"] == stamp["basis"] == "d"
