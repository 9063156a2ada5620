"""Trial boots: a new kernel boots once (grub-reboot), is verified, and only then becomes the default.

GRUB's saved default stays on the kernel that ran before until the new one has booted and the
stage's verify passed on it. A kernel that does not come up (a panic reboots the box, see
kernel_boot_panic_seconds) is left behind by GRUB on the next boot: the one-shot entry is spent.

The trial's record is TRIAL_FILE in the stage's state folder (0600, in a 0700 folder):

    {"kernel": "7.2.0-...", "from": "6.8.0-...", "result": "pending" | "passed" | "failed",
     "reason": "...", "started": "2026-...Z", "ended": "2026-...Z"}

It is written before the reboot, so a run cut off while the box was down (or a box that never
came back until someone power-cycled it) is still told apart by the next run: a pending trial of
a kernel that does not run is a failed one. A failed trial is not tried again until the operator
says so (arcops_retry_failed_trial): a scheduled run must not reboot a box into the same broken
kernel every hour.

Stdlib only: it runs on the box inside the arcops_trial_boot module.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..common.outputs import PRIVATE_FILE, write_atomic
from ..common.records import present, state_folder
from ..common.times import utc_iso

TRIAL_FILE = "trial.json"
RESULTS = ("pending", "passed", "failed")
RETRY_VARIABLE = "arcops_retry_failed_trial"


class TrialError(ValueError):
    """A trial that must not start (refused) or a record that cannot be read; one line, says why.
    RECORD, when set, is what to keep before failing (a pending trial found failed)."""

    def __init__(self, message: str, record: dict | None = None):
        super().__init__(message)
        self.record = record


def path(state_dir: str | Path) -> Path:
    return Path(state_dir) / TRIAL_FILE


def read(state_dir: str | Path) -> dict | None:
    """The trial record, or None; a damaged one is refused by name, never read as "no trial"."""
    p = path(state_dir)
    try:
        if not present(p):
            return None
        record = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:
        reason = getattr(e, "strerror", None) or ("nested too deeply" if isinstance(e, RecursionError) else e)
        raise TrialError(f"{p}: not a trial record ({reason}); move it aside") from None
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("kernel"), str)
        or record.get("result") not in RESULTS
    ):
        raise TrialError(f"{p}: not a trial record (needs kernel and result); move it aside")
    return record


def write(state_dir: str | Path, record: dict) -> None:
    state_folder(state_dir)
    write_atomic(path(state_dir), json.dumps(record, indent=4, sort_keys=True) + "\n", PRIVATE_FILE)


def _now() -> str:
    return utc_iso(time.time())


def did_not_come_up(record: dict, running: str) -> str:
    return (
        f"kernel {record['kernel']} did not come up: the box came back on {running} "
        f"(GRUB's one-shot entry was spent; its default never changed)"
    )


def plan(record: dict | None, release: str, running: str, retry: bool) -> tuple[str, dict | None]:
    """What a run does about RELEASE while RUNNING runs, and the record to keep (None: as it is).

    "none": the release runs already (nothing to trial; the caller verifies it and commits);
    "boot": boot it once. A pending trial of the release that does not run is recorded failed
    first; a failed one raises TrialError unless RETRY.
    """
    if release == running:
        return "none", None
    updated = None
    if record and record["kernel"] == release and record["result"] == "pending":
        updated = {**record, "result": "failed", "reason": did_not_come_up(record, running), "ended": _now()}
        record = updated
    if record and record["kernel"] == release and record["result"] == "failed" and not retry:
        raise TrialError(
            f"kernel {release} failed its trial boot ({record.get('ended') or 'time unknown'}): "
            f"{record.get('reason') or 'no reason recorded'}. GRUB's default is unchanged and the box "
            f"runs {running}. Fix the cause, then re-run with -e {RETRY_VARIABLE}=true",
            updated,
        )
    return "boot", updated


def start(release: str, running: str) -> dict:
    """The record written just before the one-shot reboot."""
    return {
        "kernel": release,
        "from": running,
        "result": "pending",
        "reason": "",
        "started": _now(),
        "ended": "",
    }


def end(record: dict | None, release: str, running: str, failure: str = "") -> dict:
    """The record once the trial is decided: passed when RELEASE runs and nothing failed."""
    base = record if record and record["kernel"] == release else start(release, running)
    if running == release and not failure and base["result"] == "passed":
        return base
    if running != release:
        reason = did_not_come_up(base, running)
    elif failure:
        reason = f"kernel {release} booted but its verify failed: {failure}"
    else:
        return {**base, "result": "passed", "reason": "", "ended": _now()}
    return {**base, "result": "failed", "reason": reason, "ended": _now()}


def summary(record: dict | None) -> dict[str, Any]:
    """What the status and the module report: the record, or that there is none."""
    return record or {"kernel": "", "result": "", "reason": ""}
