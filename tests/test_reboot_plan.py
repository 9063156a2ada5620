"""intel_stack's reboot decision (arcops.kernel.reboot_plan): a trial boot for a pinned kernel that
does not run, a plain reboot for a GuC an xe GPU has not loaded, nothing otherwise."""

import json

import pytest
from arcops.kernel.reboot_plan import plan, stale_guc
from hypothesis import given
from hypothesis import strategies as st

from .helpers.ansible_run import needs_ansible, run_module

PINNED, GUC = "6.17.0-1009-intel", "70.60.0"
B60 = {"address": "0000:29:00.0", "driver": "xe", "guc_loaded": GUC}


def _gpu(**over):
    return B60 | over


@pytest.mark.parametrize(
    ("running", "kernel", "guc", "gpus", "reasons", "trial"),
    [
        (PINNED, PINNED, GUC, [B60], [], False),
        ("6.8.0-49-generic", PINNED, GUC, [B60], ["running kernel 6.8.0-49-generic, pinned " + PINNED], True),
        # The kernel is not this run's to boot: another running kernel is no reason.
        ("6.8.0-49-generic", None, GUC, [B60], [], False),
        (
            PINNED,
            PINNED,
            GUC,
            [B60, _gpu(address="0000:2d:00.0", guc_loaded="70.36.0")],
            ["GuC 70.60.0 not yet loaded on 0000:2d:00.0"],
            False,
        ),
        # Both: the trial boot loads the firmware too.
        (
            "6.8.0-49-generic",
            PINNED,
            GUC,
            [_gpu(guc_loaded="70.36.0")],
            [
                "running kernel 6.8.0-49-generic, pinned " + PINNED,
                "GuC 70.60.0 not yet loaded on 0000:29:00.0",
            ],
            True,
        ),
        # No firmware this run, a GuC that could not be read, another driver: no reason.
        (PINNED, PINNED, None, [_gpu(guc_loaded="70.36.0")], [], False),
        (PINNED, PINNED, GUC, [_gpu(guc_loaded=None)], [], False),
        (PINNED, PINNED, GUC, [_gpu(driver="i915", guc_loaded="70.36.0")], [], False),
        (PINNED, PINNED, GUC, [], [], False),
    ],
)
def test_the_box_reboots_for_what_differs_from_the_pins(running, kernel, guc, gpus, reasons, trial):
    got = plan(running, kernel, guc, gpus)
    assert (list(got.reasons), got.trial, got.as_dict()["reboot"]) == (reasons, trial, bool(reasons))


@pytest.mark.parametrize(
    ("gpus", "message"), [("x", "gpus: must be a list"), ([1], "each GPU must be a mapping")]
)
def test_gpus_of_the_wrong_shape_are_refused(gpus, message):
    with pytest.raises(ValueError, match=message):
        stale_guc(gpus, GUC)


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "driver": st.sampled_from(["xe", "i915", None]),
                "guc_loaded": st.none() | st.sampled_from([GUC, "70.36.0"]),
                "address": st.text(max_size=12),
            }
        )
    )
)
def test_a_gpu_is_a_reason_only_when_xe_runs_another_known_guc(gpus):
    stale = stale_guc(gpus, GUC)
    assert len(stale) == sum(1 for g in gpus if g["driver"] == "xe" and g["guc_loaded"] == "70.36.0")


@needs_ansible
def test_the_module_says_why_and_refuses_bad_gpus():
    args = {"running": "6.8.0-49-generic", "kernel": PINNED, "guc": GUC, "gpus": [B60]}
    done = run_module("arcops_reboot_plan", json.dumps(args))
    assert (done["changed"], done["reboot"], done["trial"]) == (False, True, True)
    assert done["reasons"] == ["running kernel 6.8.0-49-generic, pinned " + PINNED]
    none = run_module("arcops_reboot_plan", json.dumps(args | {"kernel": "", "guc": ""}))
    assert (none["reboot"], none["trial"], none["reasons"]) == (False, False, [])
