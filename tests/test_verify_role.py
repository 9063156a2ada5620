"""The verify role through a real ansible-playbook on this machine, against the real vLLM (CPU
build) the gate tests start: the service found in a vllm_service record, the verdict recorded,
a box that answers wrong failed after its record, bad input refused, a verdict that holds."""

import json
import time

from arcops.prove import verify_fresh

from .helpers.vllm_cpu import MODEL_NAME

ASK = "Ask each service the prompt set, one at a time and all at once"


def test_the_role_gates_the_recorded_service_records_and_holds_still(play):
    rc, stats, tasks = play(check=True)
    assert rc == 0 and not play.state.exists() and not (play.facts / "arcops_verify.fact").exists()
    rc, stats, tasks = play()
    assert rc == 0 and stats["failures"] == 0 and stats["changed"] == 1, tasks
    record = json.loads((play.state / "state.json").read_text())
    assert record["passed"] is True and list(record["targets"]) == ["vllm_service"]
    assert json.loads((play.facts / "arcops_verify.fact").read_text()) == record
    shown = tasks["Show each service's verdict"]["msg"]
    assert shown[0].startswith(f"vllm_service {MODEL_NAME} @ http://127.0.0.1:") and shown[0].endswith(
        "; PASS"
    )
    # Again: same answers, same record, nothing changed.
    rc, stats, _ = play()
    assert (rc, stats["changed"]) == (0, 0)


def test_the_role_fails_a_box_that_answers_wrong_after_recording_it(play):
    rc, stats, tasks = play(verify_prompts="")  # the shipped set: the random model fails it
    assert rc == 2 and stats["failures"] == 1
    failed = tasks["Fail the box unless every service passed"]
    assert failed["msg"].startswith("vllm_service: 0 of 10 right in both runs (wrong: crates, ages,")
    record = json.loads((play.state / "state.json").read_text())
    assert record["passed"] is False and record["targets"]["vllm_service"]["right"] == 0


def test_the_role_refuses_bad_input_before_asking_or_writing(play):
    golden_dir = play.tmp / "goldens"
    golden_dir.mkdir()
    (golden_dir / "box.json").write_text("{not json")
    rc, _, tasks = play(verify_golden_dir=str(golden_dir), verify_targets=[{"name": "a b", "url": "h"}])
    assert rc == 2 and not play.state.exists()
    msg = tasks["Check the targets, prompt set, goldens and bench options"]["msg"]
    assert msg.startswith("verify_targets[0].name: 'a b' must be") and "box.json: not JSON" in msg
    assert msg.endswith("Nothing was changed.")


def test_the_role_off_records_that_nothing_was_asked(play):
    rc, _, _ = play(verify_gate=False)
    assert rc == 0
    recorded = json.loads((play.state / "state.json").read_text())
    # No stack.yml here: no release.
    assert recorded == {"gate": False, "passed": None, "release": None, "schema": 1, "stage": "verify"}


def test_a_passed_verdict_holds_until_what_it_rests_on_changes(play):
    rc, stats, tasks = play()
    assert (rc, stats["changed"], tasks[ASK]["asked"]) == (0, 1, True)
    record = json.loads((play.state / "state.json").read_text())
    stamp = json.loads((play.state / verify_fresh.STAMP).read_text())
    assert stamp["basis"] == record["basis"] and stamp["passed"] is True
    assert oct((play.state / verify_fresh.STAMP).stat().st_mode & 0o777) == "0o600"
    # Again: nothing asked, the verdict and the line that says why, nothing changed.
    rc, stats, tasks = play()
    assert (rc, stats["changed"], tasks[ASK]["asked"]) == (0, 0, False)
    shown = tasks["Show each service's verdict"]["msg"]
    assert shown[0].endswith("; PASS") and shown[-1].startswith("not asked again: the services passed")
    # Asked when told to, and after the interval; the same answers change nothing.
    for extra in ({"verify_reask_after": 0}, {"arcops_full_run": True}):
        rc, stats, tasks = play(**extra)
        assert (rc, stats["changed"], tasks[ASK]["asked"]) == (0, 0, True), extra
    stamp = json.loads((play.state / verify_fresh.STAMP).read_text())
    (play.state / verify_fresh.STAMP).write_text(json.dumps({**stamp, "asked_at": time.time() - 90000}))
    rc, stats, tasks = play()
    assert (rc, stats["changed"], tasks[ASK]["asked"]) == (0, 0, True)
    # Another stage's record changed (here: the service moved to where nothing listens): asked,
    # and the box fails at once, not a day later.
    fact = play.facts / "arcops_vllm_service.fact"
    moved = json.loads(fact.read_text())
    moved["endpoint"]["url"] = "http://127.0.0.1:9"
    fact.write_text(json.dumps(moved))
    rc, stats, tasks = play()
    assert (rc, tasks[ASK]["asked"]) == (2, True) and "cannot reach the server" in tasks[ASK]["reasons"][0]
    # A verdict that failed is asked again on every run.
    rc, _, tasks = play()
    assert (rc, tasks[ASK]["asked"]) == (2, True)
