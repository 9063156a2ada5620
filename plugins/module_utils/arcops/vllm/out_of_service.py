"""A box whose GPU is wedged is out of service until it reboots.

xe declares a device wedged when a GT reset fails ("reset failed (-ETIMEDOUT)", then "Xe has
declared device ... as wedged"): no restart of vLLM brings it back, only a reboot (reports:
compute-runtime #946, #962; llama.cpp #25692). The health watch then takes the evidence, stops
vLLM and writes MARK; the start watchdog refuses to start while MARK exists; the metrics and
`arcops fleet status` say so. MARK is under /run, which is emptied at every boot: the reboot that
un-wedges the GPU also puts the box back in service, and nothing else does.

Where rebooting is allowed (arcops_allow_reboot), the watch reboots the box itself, at most
max_per_day times in any 24 hours: REBOOTS keeps their times for every watch of the box (vLLM's,
llama-server's) and across the reboots themselves. Past the limit the box stays out of service
for a person: a GPU that wedges again right after each reboot must not reboot the box for ever.

Stdlib only: it runs on the box.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..common.outputs import write_atomic
from . import health

MARK = "/run/arcops/vllm-out-of-service.json"
REBOOTS = "/var/lib/arcops/wedged-reboots.json"
DAY = 86400.0


def mark(path: Path, report: dict, cards: list[str]) -> dict:
    """Write the mark for the health report that took the box out of service."""
    data = {
        "since": report.get("at"),
        "since_epoch": report.get("at_epoch"),
        "state": report.get("state"),
        "cards": sorted(cards),
        "detail": report.get("detail"),
        "evidence": (report.get("evidence") or {}).get("dir"),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def read(path: Path) -> dict | None:
    """The mark, or None when the box is in service. A mark that cannot be read still says out
    of service (something wrote it there): its content is then unknown."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError:
        return {"cards": [], "detail": "unreadable mark"}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        return {"cards": [], "detail": "unreadable mark"}
    cards = data.get("cards")
    data["cards"] = [c for c in cards if isinstance(c, str)] if isinstance(cards, list) else []
    return data


def sentence(data: dict) -> str:
    """One line for the operator."""
    cards = ", ".join(data.get("cards") or []) or "a GPU"
    since = f"out of service since {data.get('since') or 'an unknown time'}"
    if data.get("state") == "stuck":
        return f"{since}: {cards} stayed stuck after a restart; a reboot puts it back in service"
    return (
        f"{since}: {cards} wedged (a failed GT reset); only a reboot brings it back, and the reboot "
        "puts the box back in service"
    )


def reboots(path: Path, now: float) -> list[float]:
    """The reboots for a wedged GPU in the 24 hours before NOW (sorted); none when PATH is missing
    or unreadable (a ledger cut short must not stop the next reboot for ever, nor allow many: each
    reboot writes it whole again)."""
    return health.within(health.read_times(path) or [], now, DAY)


def decide_reboot(path: Path, now: float, max_per_day: int) -> tuple[bool, str]:
    """Whether the box may reboot for a wedged GPU now, and why not."""
    if max_per_day <= 0:
        return False, "rebooting is not allowed here (arcops_allow_reboot): the box needs a person"
    recent = reboots(path, now)
    if len(recent) >= max_per_day:
        return False, (
            f"{len(recent)} reboot(s) for a wedged GPU in the last 24 h (limit {max_per_day}): "
            "not rebooting again, the box needs a person"
        )
    return True, f"reboot {len(recent) + 1} of at most {max_per_day} in 24 h"


def record_reboot(path: Path, now: float) -> None:
    """Count a reboot before it is asked for: a watch that dies in it still counted it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps([*reboots(path, now), now]) + "\n")
