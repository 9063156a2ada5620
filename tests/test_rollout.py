"""The rollout's decisions per box, its record on the control node and its summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from arcops.fleet import release_id, rollout, waves
from hypothesis import given
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]


def box(verified=None, passed=True):
    """A box's status as fleet_status.box_facts gives it."""
    return {"verified_release": verified, "running": verified if passed else None}


@pytest.mark.parametrize(
    "status, target, action",
    [
        (box(), "2026.12.2", "deploy"),
        (box("2026.12.1"), "2026.12.2", "upgrade"),
        (box("2026.12.2"), "2026.12.2", "check"),
        (box("2026.12.2", passed=False), "2026.12.2", "redo"),
        (box("2026.9"), "2026.12", "upgrade"),
        (box("2026.12"), "2026.12.1", "upgrade"),  # a longer id after its prefix is newer
    ],
)
def test_each_box_gets_its_action(status, target, action):
    assert rollout.decide(status, target) == {
        "action": action,
        "before": status["verified_release"],
        "problem": None,
    }


def test_a_downgrade_is_refused_unless_asked_for():
    refused = rollout.decide(box("2026.12.10"), "2026.12.9")
    assert refused["action"] == "downgrade"
    assert "newer than the target 2026.12.9" in refused["problem"]
    assert "arcops_rollout_allow_downgrade" in refused["problem"]
    assert rollout.decide(box("2026.12.10"), "2026.12.9", allow_downgrade=True)["problem"] is None


def test_an_unread_box_or_no_release_is_refused():
    assert "could not be read" in rollout.decide(None, "1")["problem"]
    assert "no stack.yml" in rollout.decide(box("1"), None)["problem"]


def test_the_plan_follows_the_waves_and_lists_every_refusal():
    wave_list = waves.waves({"canary": ["a"], "fleet": ["b", "c", "d"]}, ["a", "b", "c", "d"], [1, 2])
    targets = dict.fromkeys("abcd", "2026.12.2")
    boxes = {"a": box("2026.12.1"), "b": box("2026.12.2"), "c": box("2026.12.3")}
    planned = rollout.plan(wave_list, targets, boxes, {"d": "unreachable: ssh timed out"})
    assert [(r["box"], r["wave"], r["batch"], r["action"]) for r in planned["boxes"]] == [
        ("a", "canary", 1, "upgrade"),
        ("b", "fleet", 1, "check"),
        ("c", "fleet", 2, "downgrade"),
        ("d", "fleet", 2, None),
    ]
    assert planned["problems"][0].startswith("c: runs release 2026.12.3, newer")
    assert planned["problems"][1] == "d: unreachable: ssh timed out"


def test_the_record_keeps_each_step_and_the_halt(tmp_path):
    planned = {
        "boxes": [
            {"box": b, "wave": w, "batch": n, "before": "1", "target": "2", "action": "upgrade"}
            for b, w, n in (("a", "canary", 1), ("b", "fleet", 1), ("c", "fleet", 2))
        ]
    }
    run = rollout.start(tmp_path / "rollouts", "2", planned, when="2026-12-02T10:00:00Z")
    assert run.name == "20261202T100000Z-2"
    assert (tmp_path / "rollouts" / "latest").resolve() == run
    again = rollout.start(tmp_path / "rollouts", "2", planned, when="2026-12-02T10:00:00Z")
    assert again.name.endswith(".2")  # never into another run's folder
    for name, at in (
        ("begin", "10:00:00"),
        ("gate before", "10:00:20"),
        ("drain", "10:00:25"),
        ("apply", "10:01:25"),
    ):
        rollout.step(run, "a", name, "ok", when=f"2026-12-02T{at}Z", fields={"action": "upgrade"})
    rollout.step(
        run, "a", "done", "ok", "vllm_service 8 of 8 right", {"after": "2"}, when="2026-12-02T10:02:00Z"
    )
    rollout.step(run, "b", "begin", "ok", when="2026-12-02T10:02:01Z")
    rollout.step(
        run,
        "b",
        "gate",
        "failed",
        "verify : Fail the box: vllm_service: 0 of 8 right",
        when="2026-12-02T10:03:00Z",
    )
    rollout.step(run, "b", "rollback", "ok", when="2026-12-02T10:04:00Z")
    rollout.step(run, "b", "rollback gate", "ok", fields={"after": "1"}, when="2026-12-02T10:04:30Z")
    assert rollout.halted(run) is None
    rollout.halt(run, "b", "gate failed: 0 of 8 right", when="2026-12-02T10:04:31Z")
    rollout.halt(run, "a", "a later halt does not replace the first")
    assert rollout.halted(run)["box"] == "b"

    record = rollout.load(run)
    a = record["boxes"][0]
    assert [s["seconds"] for s in a["steps"]] == [0, 20, 5, 60, 35]
    summed = rollout.finish(run, when="2026-12-02T10:05:00Z")
    assert summed["result"] == "halted"
    assert [(r["box"], r["result"], r["after"]) for r in summed["rows"]] == [
        ("a", "upgraded", "2"),
        ("b", "rolled back", "1"),
        ("c", "not reached", "-"),
    ]
    text = (run / "summary.txt").read_text()
    assert "rollout to release 2: halted" in text
    assert "halted by b: gate failed: 0 of 8 right" in text
    assert "b: verify : Fail the box" not in text  # said once, as the halt's reason
    assert summed["rows"][1]["why"] == "verify : Fail the box: vllm_service: 0 of 8 right"
    assert json.loads((run / "summary.json").read_text())["finished"] == "2026-12-02T10:05:00Z"


def test_box_results_in_a_word():
    def steps(*pairs):
        return {"action": "upgrade", "steps": [{"step": s, "result": r, "seconds": 0} for s, r in pairs]}

    assert rollout.box_result(steps()) == "not reached"
    assert rollout.box_result(steps(("begin", "ok"))) == "in progress"
    assert rollout.box_result(steps(("begin", "ok"), ("done", "ok"))) == "upgraded"
    assert rollout.box_result({**steps(("begin", "ok"), ("done", "ok")), "action": "check"}) == "checked"
    assert rollout.box_result(steps(("apply", "failed"), ("rollback", "failed"))) == "ROLLBACK FAILED"
    assert rollout.box_result(
        steps(("apply", "failed"), ("rollback", "ok"), ("rollback gate", "failed"))
    ) == ("ROLLBACK FAILED")
    assert rollout.box_result(steps(("gate", "failed"), ("rollback", "skipped"))) == "FAILED"
    assert rollout.box_result(steps(("check", "failed"))) == "FAILED"


@pytest.mark.parametrize(
    "args, message",
    [
        (("bad/box", "begin", "ok"), "not an inventory host name"),
        (("a", "Begin!", "ok"), "lowercase letters"),
        (("a", "begin", "maybe"), "one of ok, failed, skipped"),
    ],
)
def test_bad_steps_are_refused_before_anything_is_written(tmp_path, args, message):
    run = rollout.start(tmp_path, "1", {"boxes": []})
    with pytest.raises(ValueError, match=message):
        rollout.step(run, *args)
    assert list((run / rollout.BOXES).iterdir()) == []


def test_a_folder_without_a_header_is_no_record(tmp_path):
    with pytest.raises(ValueError, match="not a rollout record"):
        rollout.load(tmp_path)


ids = st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,4}){0,3}", fullmatch=True)


@given(before=ids, target=ids)
def test_every_pair_of_releases_gets_one_action(before, target):
    d = rollout.decide(box(before), target)
    expected = (
        "check"
        if before == target
        else "upgrade"
        if release_id.order(before) < release_id.order(target)
        else "downgrade"
    )
    if before != target and release_id.order(before) == release_id.order(target):  # "1.01" and "1.1"
        assert d["action"] is None and "spelled otherwise" in d["problem"]
        return
    assert d["action"] == expected
    assert (d["problem"] is None) == (expected != "downgrade")


def test_ansible_doc_renders_the_rollout_modules_and_callback():
    doc = Path(sys.executable).parent / "ansible-doc"
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")}
    for kind, name in (
        ("module", "arcops.arc.arcops_rollout"),
        ("module", "arcops.arc.arcops_drain"),
        ("callback", "arcops.arc.arcops_changes"),
    ):
        run = subprocess.run(
            [str(doc), "-t", kind, "--json", name], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert run.returncode == 0 and "[ERROR]" not in run.stderr, run.stderr
        assert json.loads(run.stdout)[name]["doc"]["short_description"]


def test_two_boxes_halting_together_leave_one_halt(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    run = rollout.start(tmp_path, "2", {"boxes": []})
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda b: rollout.halt(run, b, f"{b} failed"), [f"box{i}" for i in range(8)]))
    first = rollout.halted(run)
    assert all(g == first for g in got)  # every box reads the one halt that stands
    assert first["reason"] == f"{first['box']} failed"
    assert json.loads((run / rollout.HEADER).read_text())["plan"] == []  # the header is left alone


def test_a_halt_outside_a_record_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a rollout record"):
        rollout.halt(tmp_path, "a", "why")
    assert list(tmp_path.iterdir()) == []


def test_one_version_spelled_two_ways_is_refused():
    d = rollout.decide(box("2026.12.01"), "2026.12.1")
    assert d["action"] is None and "no leading zeros" in d["problem"]
