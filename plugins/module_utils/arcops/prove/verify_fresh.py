"""Whether the verify stage's last verdict still holds, so that a re-run need not ask again.

Asking every service the prompt set twice is the slowest part of a converged run (the lab's two
boxes: 3.2 s of 7.3 s, a real model far longer), and it proves nothing new when nothing the
verdict rests on has changed. What it rests on, as one digest kept in the record (``basis``):
every other stage's record on the box (a new image, build, kernel or firmware changes one), the
stage's own inputs (targets, prompt set, goldens, bench options, the release), and the boot (a
reboot re-asks). The time of the last ask is bookkeeping, not part of the verdict: it is kept
beside the record (``asked.json`` in the stage's state folder), so a box that answers the same
way keeps its record unchanged. A verdict that failed, or is older than the reask interval, is
asked again; a service that restarted on its own is the health watch's to judge meanwhile.

Stdlib only: it runs on the box inside the arcops_verify module.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..common.inputs import read_text
from ..common.numbers import finite_or_none
from ..common.outputs import PRIVATE_FILE, write_atomic
from ..common.records import state_folder

STAMP = "asked.json"
STAMP_MAX = 4096  # a stamp is a hundred bytes; a bigger file is not one
SKEW_S = 60  # a stamp this far in the future is from a wrong clock: asked again
REASK_MAX = 90 * 86400  # a verdict older than a quarter is no verdict


def basis(records: dict[str, Any], inputs: dict[str, Any], boot: str) -> str:
    """The digest of what a verdict rests on: RECORDS (every stage's but verify's own), the
    stage's INPUTS and the BOOT."""
    others = {stage: record for stage, record in records.items() if stage != "verify"}
    text = json.dumps({"records": others, "inputs": inputs, "boot": boot}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_stamp(state_dir: str) -> dict | None:
    """The last ask's stamp {basis, asked_at, passed}, None when there is none or it is no stamp
    (a link is not followed; read_text refuses what is no regular file or too big)."""
    path = Path(state_dir) / STAMP
    try:
        if path.is_symlink():
            return None
        data = json.loads(read_text(path, "stamp", limit=STAMP_MAX))
    except (OSError, ValueError, RecursionError):  # InputError is a ValueError
        return None
    return data if isinstance(data, dict) else None


def write_stamp(state_dir: str, digest: str, passed: bool, now: float) -> None:
    """Keep when the services were last asked, on what basis and with what verdict."""
    folder = state_folder(Path(state_dir))
    text = json.dumps({"basis": digest, "asked_at": round(now, 3), "passed": passed}) + "\n"
    write_atomic(folder / STAMP, text, PRIVATE_FILE)


def still_holds(last: Any, stamp: dict | None, digest: str, now: float, reask_after: float) -> str | None:
    """Why the LAST verdict (the verify record) still holds, as a line for the play; None when the
    services must be asked: a reask interval of 0, no passed verdict on this basis, no stamp of
    an ask on it, or an ask older than REASK_AFTER seconds (or from a clock ahead of this one)."""
    if reask_after <= 0 or not isinstance(last, dict) or not isinstance(stamp, dict):
        return None
    if last.get("passed") is not True or last.get("basis") != digest:
        return None
    if stamp.get("basis") != digest or stamp.get("passed") is not True:
        return None
    at = finite_or_none(stamp.get("asked_at"))
    if at is None:
        return None
    age = now - at
    if age >= reask_after or age < -SKEW_S:
        return None
    return (
        f"not asked again: the services passed {max(age, 0):.0f} s ago, and no stage record, input"
        f" or boot has changed since (asked again after {reask_after:g} s: verify_reask_after)"
    )
