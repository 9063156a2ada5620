"""Trial boots (arcops.kernel.trial): a kernel boots once and becomes the default only once it
verified; what a later run makes of a trial that never came back, failed, or passed."""

import json
import os

import pytest
from arcops.kernel import trial
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers.ansible_run import needs_ansible, run_module

NEW, OLD = "7.2.0-070200-generic", "6.8.0-31-generic"


def test_a_running_kernel_needs_no_trial():
    assert trial.plan(None, NEW, NEW, retry=False) == ("none", None)


def test_a_new_kernel_boots_once():
    assert trial.plan(None, NEW, OLD, retry=False) == ("boot", None)
    # Another kernel's failed trial does not stand in the way.
    other = {**trial.start("7.1.0-1", OLD), "result": "failed"}
    assert trial.plan(other, NEW, OLD, retry=False) == ("boot", None)


def test_a_pending_trial_of_a_kernel_that_does_not_run_never_came_back(tmp_path):
    pending = trial.start(NEW, OLD)
    with pytest.raises(trial.TrialError) as e:
        trial.plan(pending, NEW, OLD, retry=False)
    assert e.value.record["result"] == "failed"
    assert "did not come up" in e.value.record["reason"] and OLD in e.value.record["reason"]
    assert "arcops_retry_failed_trial=true" in str(e.value)
    assert "\n" not in str(e.value)
    # With retry, the record still says how the last one ended, and the kernel boots again.
    action, updated = trial.plan(pending, NEW, OLD, retry=True)
    assert action == "boot" and updated["result"] == "failed"


def test_a_failed_trial_is_refused_until_retry():
    failed = trial.end(trial.start(NEW, OLD), NEW, OLD)
    with pytest.raises(trial.TrialError, match=f"kernel {NEW} failed its trial boot"):
        trial.plan(failed, NEW, OLD, retry=False)
    assert trial.plan(failed, NEW, OLD, retry=True) == ("boot", None)


def test_end_tells_passed_from_failed():
    pending = trial.start(NEW, OLD)
    assert trial.end(pending, NEW, NEW)["result"] == "passed"
    failed = trial.end(pending, NEW, NEW, failure="GuC 70.44.1 loaded, pinned 70.60.0")
    assert failed["result"] == "failed" and "verify failed: GuC 70.44.1" in failed["reason"]
    came_back = trial.end(pending, NEW, OLD)
    assert came_back["result"] == "failed" and came_back["from"] == OLD
    # A passed trial is left as it is (a converged re-run writes nothing).
    passed = trial.end(pending, NEW, NEW)
    assert trial.end(passed, NEW, NEW) is passed


def test_records_are_private_and_read_back(tmp_path):
    state = tmp_path / "arcops" / "mainline_kernel"
    assert trial.read(state) is None
    record = trial.start(NEW, OLD)
    trial.write(state, record)
    assert trial.read(state) == record
    assert os.stat(state / trial.TRIAL_FILE).st_mode & 0o777 == 0o600
    assert os.stat(state).st_mode & 0o777 == 0o700


@pytest.mark.parametrize(
    "text", ["", "[]", "{}", '{"kernel": 1, "result": "passed"}', '{"kernel": "x", "result": "ok"}', "\xff"]
)
def test_a_damaged_record_is_refused_by_name(tmp_path, text):
    (tmp_path / trial.TRIAL_FILE).write_text(text, encoding="latin-1")
    with pytest.raises(trial.TrialError, match=r"trial\.json: not a trial record"):
        trial.read(tmp_path)


def test_a_link_is_not_read(tmp_path):
    (tmp_path / "elsewhere").write_text(json.dumps(trial.start(NEW, OLD)))
    (tmp_path / trial.TRIAL_FILE).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(trial.TrialError):
        trial.read(tmp_path)


@needs_ansible
def test_the_module_plans_starts_and_ends_a_trial_through_ansible(tmp_path):
    state = tmp_path / "state"
    base = f"state_dir={state} release={NEW}"
    assert run_module("arcops_trial_boot", f"action=plan running={OLD} {base}")["decision"] == "boot"
    # Check mode writes nothing.
    assert run_module("arcops_trial_boot", f"action=start running={OLD} {base}", check=True)["changed"]
    assert not (state / trial.TRIAL_FILE).exists()
    assert run_module("arcops_trial_boot", f"action=start running={OLD} {base}")["changed"]
    # The box came back on the old kernel: the next run records that and refuses, in one line.
    refused = run_module("arcops_trial_boot", f"action=plan running={OLD} {base}")
    assert refused["failed"] and refused["changed"] and "did not come up" in refused["msg"]
    assert trial.read(state)["result"] == "failed"
    # With retry it boots again; once it runs and verified, it passed, and stays so.
    retried = run_module("arcops_trial_boot", f"action=plan running={OLD} retry=true {base}")
    assert retried["decision"] == "boot"
    run_module("arcops_trial_boot", f"action=start running={OLD} {base}")
    assert run_module("arcops_trial_boot", f"action=end running={NEW} {base}")["trial"]["result"] == "passed"
    assert not run_module("arcops_trial_boot", f"action=end running={NEW} {base}")["changed"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
_records = st.fixed_dictionaries(
    {},
    optional={
        "kernel": st.text(max_size=20) | _json,
        "result": st.sampled_from(sorted(trial.RESULTS)) | _json,
        "at": _json,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.binary(max_size=200),
        _json.map(lambda v: json.dumps(v).encode()),
        _records.map(lambda r: json.dumps(r).encode()),
    ),
    st.text(max_size=12),
    st.text(max_size=12),
    st.booleans(),
)
def test_any_trial_file_is_read_or_refused_by_name_and_plans_never_crash(
    tmp_path, raw, release, running, retry
):
    """What a trial.json holds (cut short, another shape, bytes): a record the plan can use, or
    one line naming the file; never another exception."""
    (tmp_path / trial.TRIAL_FILE).write_bytes(raw)
    try:
        record = trial.read(tmp_path)
    except trial.TrialError as e:
        assert str(tmp_path / trial.TRIAL_FILE) in str(e) and "\n" not in str(e)
        return
    try:
        trial.plan(record, release or "6.17.0-1009-intel", running or "6.8.0-1-generic", retry)
    except trial.TrialError as e:
        assert "\n" not in str(e)
