"""A fleet's records as the control node keeps them, for the report and metrics tests."""

from __future__ import annotations

from pathlib import Path

from arcops.fleet import fleet_status, rollout

# release.load's answer for a release matching a known-bad entry (deployed by override) and a
# fine one, as known_stacks.lines words them.
KNOWN = {
    "id": "2026.12.2",
    "known": [
        "llm-scaler-0.26.0-b1 (overridden): dual B60: wrong output on the 10-prompt gate.",
        "b60-6.17-guc-70.60 (fine): dual B60 at 73.7 tok/s.",
    ],
}


def status() -> dict:
    """What `arcops fleet status --json` prints for three boxes: arc-01 on its release, arc-02 a
    release behind (drift, 3 resets), arc-03 unreachable (a password in the reason)."""

    def facts(running: str, resets: int) -> dict:
        return {
            "running": running,
            "verified_release": running,
            "kernel": "6.17.0-1009-intel",
            "guc": ["70.60.0", "70.60.0"],
            "image": "intel/llm-scaler-vllm:0.26.0-b2",
            "image_id": None,
            "start": "ready",
            "gate": "passed (vllm_service 10/10)",
            "bench": "vllm_service 73.7 tok/s @1",
            "xe_resets": resets,
        }

    rows = [
        fleet_status.row("arc-01", "canary 1", "2026.12.2", facts("2026.12.2", 0)),
        fleet_status.row("arc-02", "fleet 1", "2026.12.2", facts("2026.12.1", 3)),
        fleet_status.row(
            "arc-03", "fleet 1", "2026.12.2", None, "unreachable: ssh://ops:hunter22x@arc-03 timed out"
        ),
    ]
    return {"rows": rows, "problems": []}


def halted_rollout(root: Path) -> Path:
    """A rollout to 2026.12.2 under root/rollouts: arc-01 upgraded, arc-02 failed its gate, was
    rolled back and halted the run."""
    planned = {
        "boxes": [
            {
                "box": b,
                "wave": w,
                "batch": 1,
                "before": "2026.12.1",
                "target": "2026.12.2",
                "action": "upgrade",
            }
            for b, w in (("arc-01", "canary"), ("arc-02", "fleet"))
        ]
    }
    run = rollout.start(root / "rollouts", "2026.12.2", planned, when="2026-12-05T10:00:00Z")
    rollout.step(run, "arc-01", "begin", "ok", when="2026-12-05T10:00:00Z")
    rollout.step(run, "arc-01", "done", "ok", fields={"after": "2026.12.2"}, when="2026-12-05T10:03:00Z")
    rollout.step(run, "arc-02", "begin", "ok", when="2026-12-05T10:03:01Z")
    rollout.step(run, "arc-02", "gate", "failed", "vllm_service: 3 of 10 right", when="2026-12-05T10:05:00Z")
    rollout.step(run, "arc-02", "rollback", "ok", fields={"after": "2026.12.1"}, when="2026-12-05T10:06:00Z")
    rollout.step(run, "arc-02", "rollback gate", "ok", when="2026-12-05T10:06:30Z")
    rollout.halt(run, "arc-02", "gate failed: 3 of 10 right", when="2026-12-05T10:06:31Z")
    return run
