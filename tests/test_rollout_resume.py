"""A rollout cut off half-way (its control node died), resumed from its record
(arcops.fleet.rollout_resume): a box it had begun to change is finished without its gate before,
boxes it finished are only gated, boxes it never changed are planned as ever."""

from __future__ import annotations

import json
import shutil

import pytest
from arcops.fleet import rollout, rollout_resume, waves
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .helpers.ansible_run import needs_ansible, run_module

BOXES = ["a", "b", "c", "d", "e"]


def _box(verified):
    return {"verified_release": verified, "running": verified}


def _plan(boxes: dict) -> dict:
    wave_list = waves.waves({"canary": ["a"], "fleet": BOXES[1:]}, BOXES, [1, 4])
    return rollout.plan(wave_list, dict.fromkeys(BOXES, "2"), boxes, {})


# The cut run's boxes planned again: a finished, b and c resumed, d (unchanged) and e anew.
RESUMED = [("a", "check"), ("b", "resume"), ("c", "resume"), ("d", "upgrade"), ("e", "upgrade")]


def _actions(planned: dict) -> list[tuple[str, str]]:
    return [(r["box"], r["action"]) for r in planned["boxes"]]


def _plan_after(run) -> tuple[dict, list[str]]:
    """The plan once RUN was cut off: a runs the target; b to e still run release 1."""
    planned = _plan({"a": _box("2"), **{b: _box("1") for b in "bcde"}})
    return planned, rollout_resume.resume(planned, run)


def _cut_run(root):
    """A run to release 2 cut off: a done, b cut during apply, c drained, d cut in its gate
    before (unchanged), e not reached; a and b kept bench baselines."""
    planned = _plan({b: _box("1") for b in BOXES})
    run = rollout.start(root, "2", planned, when="2026-12-07T01:00:00Z")
    steps = {
        "a": ["begin", "gate before", "drain", "apply", "done"],
        "b": ["begin", "gate before", "drain"],
        "c": ["begin", "gate before", "drain"],
        "d": ["begin"],
    }
    for box, names in steps.items():
        for name in names:
            rollout.step(run, box, name, "ok", fields={"action": "upgrade", "before": "1"})
    for box in ("a", "b"):
        (run / rollout.BENCH / f"{box}.vllm_service.json").write_text('{"tok_s": 73.7}\n')
    return run


def test_only_the_boxes_the_cut_run_had_begun_to_change_are_resumed(tmp_path):
    run = _cut_run(tmp_path / "rollouts")
    assert rollout_resume.cut_off_run(tmp_path / "rollouts") == run
    planned, lines = _plan_after(run)  # b and c half-changed
    assert _actions(planned) == RESUMED
    b = planned["boxes"][1]["resume"]
    assert b == {
        "run": run.name,
        "step": "drain",
        "was": "upgrade",
        "before": "1",
        "baselines": {"vllm_service": str(run / "bench" / "b.vllm_service.json")},
    }
    assert planned["boxes"][2]["resume"]["baselines"] == {}
    assert lines == [
        f"b: resumes run {run.name}, cut off after its drain",
        f"c: resumes run {run.name}, cut off after its drain",
    ]


def test_a_finished_or_halted_run_or_another_release_resumes_nothing(tmp_path):
    root = tmp_path / "rollouts"
    run = _cut_run(root)
    assert rollout_resume.cut_off_run(tmp_path / "nothing") is None
    rollout.halt(run, "c", "gate failed")
    assert rollout_resume.cut_off_run(root) is None
    (run / rollout.HALT).unlink()
    rollout.finish(run)
    assert rollout_resume.cut_off_run(root) is None
    (run / "summary.json").unlink()
    # The same boxes planned to release 3: the cut run (release 2) is not theirs to finish.
    wave_list = waves.waves({"canary": ["a"], "fleet": BOXES[1:]}, BOXES, [1, 4])
    planned = rollout.plan(wave_list, dict.fromkeys(BOXES, "3"), {b: _box("1") for b in BOXES}, {})
    assert rollout_resume.resume(planned, run) == []
    assert {r["action"] for r in planned["boxes"]} == {"upgrade"}


def test_a_box_planned_otherwise_now_is_not_resumed(tmp_path):
    run = _cut_run(tmp_path / "rollouts")
    # b was rolled to release 2 by hand since (its gate passed there): checked, not resumed.
    planned = _plan({"a": _box("2"), "b": _box("2"), **{x: _box("1") for x in "cde"}})
    rollout_resume.resume(planned, run)
    assert planned["boxes"][1]["action"] == "check"


JUNK = st.one_of(
    st.none(), st.integers(), st.text(), st.lists(st.integers()), st.dictionaries(st.text(), st.text())
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(JUNK)
def test_a_damaged_box_record_or_header_resumes_nothing_and_never_raises(tmp_path, junk):
    root = tmp_path / "rollouts"
    shutil.rmtree(root, ignore_errors=True)
    run = _cut_run(root)
    (run / rollout.BOXES / "b.json").write_text(json.dumps({"box": "b", "steps": junk, "action": "upgrade"}))
    assert "b" not in rollout_resume.resumable(run) or isinstance(junk, list)
    header = json.loads((run / rollout.HEADER).read_text())
    (run / rollout.HEADER).write_text(json.dumps({**header, "plan": [junk]}))
    assert rollout_resume.resumable(run) == {}
    planned = _plan({b: _box("1") for b in BOXES})
    rollout_resume.resume(planned, run)
    assert all(r["action"] == "upgrade" for r in planned["boxes"])


@needs_ansible
def test_the_module_plans_the_resume_and_says_why(tmp_path):
    run = _cut_run(tmp_path / "rollouts")
    args = {
        "action": "plan",
        "boxes": {"a": _box("2"), **{b: _box("1") for b in "bcde"}},
        "targets": dict.fromkeys(BOXES, "2"),
        "groups": {"canary": ["a"], "fleet": BOXES[1:]},
        "members": BOXES,
        "serial": [1, 4],
        "root": str(tmp_path / "rollouts"),
    }
    result = run_module("arcops_rollout", json.dumps(args))
    assert [r["action"] for r in result["plan"]] == ["check", "resume", "resume", "upgrade", "upgrade"]
    assert f"b: resumes run {run.name}, cut off after its drain" in result["lines"]
    assert any(" resume" in line and line.startswith("b ") for line in result["lines"])


@pytest.mark.parametrize("action, word", [("resume", "resumed"), ("upgrade", "upgraded")])
def test_a_resumed_box_that_finished_is_resumed_in_a_word(action, word):
    steps = [{"step": "begin", "result": "ok"}, {"step": "done", "result": "ok"}]
    assert rollout.box_result({"action": action, "steps": steps}) == word


def test_a_box_never_takes_the_baselines_of_a_box_named_after_it(tmp_path):
    run = _cut_run(tmp_path / "rollouts")
    (run / rollout.BENCH / "b.lab.vllm_service.json").write_text('{"tok_s": 1.0}\n')  # box "b.lab"
    assert rollout_resume.resumable(run)["b"]["baselines"] == {
        "vllm_service": str(run / "bench" / "b.vllm_service.json")
    }


def test_a_resume_cut_off_in_its_turn_is_resumed_again_with_the_first_runs_baselines(tmp_path):
    root = tmp_path / "rollouts"
    first = _cut_run(root)
    planned, _ = _plan_after(first)
    second = rollout.start(root, "2", planned, when="2026-12-07T02:00:00Z")
    rows = {r["box"]: r for r in planned["boxes"]}
    # b is cut off again just after its turn began (nothing of this run's own had changed it);
    # c after its drain; a is only checked and finishes.
    rollout.step(second, "b", "begin", "ok", fields=rows["b"])
    for name in ("begin", "gate before", "drain"):
        rollout.step(second, "c", name, "ok", fields=rows["c"])
    for name in ("begin", "done"):
        rollout.step(second, "a", name, "ok", fields=rows["a"])
    assert rollout_resume.cut_off_run(root) == second
    again, lines = _plan_after(second)
    assert _actions(again) == RESUMED
    b = again["boxes"][1]["resume"]
    assert b == {
        "run": second.name,
        "step": "begin",
        "was": "upgrade",
        "before": "1",
        "baselines": {"vllm_service": str(first / "bench" / "b.vllm_service.json")},
    }
    assert lines[0] == f"b: resumes run {second.name}, cut off after its begin"


@pytest.mark.parametrize(
    "earlier", [None, [], "upgrade", {"was": "check"}, {"was": "upgrade", "baselines": [1]}]
)
def test_a_resumed_box_with_a_damaged_resume_is_never_a_traceback(tmp_path, earlier):
    root = tmp_path / "rollouts"
    run = _cut_run(root)
    (run / rollout.BOXES / "b.json").write_text(
        json.dumps(
            {
                "box": "b",
                "action": "resume",
                "before": "1",
                "resume": earlier,
                "steps": [{"step": "begin", "result": "ok"}],
            }
        )
    )
    found = rollout_resume.resumable(run)
    if isinstance(earlier, dict) and earlier.get("was") == "upgrade":
        assert found["b"]["baselines"] == {}
    else:
        assert "b" not in found
