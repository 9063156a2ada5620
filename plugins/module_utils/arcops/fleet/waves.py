"""Rollout waves: the canary group first, one box at a time, then the fleet in batches.

A box belongs to exactly one wave (the inventory's canary or fleet group, both under
arc_servers). Batches follow Ansible's `serial` keyword exactly, since the rollout playbook hands
the same list to `serial`: each entry is a count or a percentage of the wave's boxes (rounded
down, at least one), the last entry repeats until every box has had its turn. Parsed data in,
no I/O.
"""

from __future__ import annotations

import re
from typing import Any

CANARY, FLEET = "canary", "fleet"
_PERCENT = re.compile(r"([0-9]+(?:[.][0-9]+)?)%")


class WavesError(ValueError):
    """Waves that cannot be rolled out as given; the message lists every problem, one a line."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def _size(entry: Any, total: int) -> int | None:
    if isinstance(entry, bool):
        return None
    if isinstance(entry, int):
        return entry if entry >= 1 else None
    m = _PERCENT.fullmatch(entry) if isinstance(entry, str) else None
    if m is None or not 0 < float(m[1]) <= 100:
        return None
    return max(1, int(total * float(m[1]) / 100))


def check_serial(serial: Any, where: str = "arcops_rollout_serial") -> list[str]:
    """Problems with a serial list (counts of at least 1, or percentages up to 100%)."""
    if not isinstance(serial, list) or not serial:
        return [f"{where}: must be a non-empty list of counts or percentages, e.g. [1, '25%']"]
    return [
        f"{where}[{n}]: {entry!r} is not a count of at least 1 or a percentage like '25%'"
        for n, entry in enumerate(serial)
        if _size(entry, 100) is None
    ]


def batches(hosts: list[str], serial: list) -> list[list[str]]:
    """HOSTS in batches as Ansible's `serial: SERIAL` runs them (checked by check_serial)."""
    out, start, n = [], 0, 0
    while start < len(hosts):  # by index: slicing off what is left each batch grew as n squared
        size = _size(serial[min(n, len(serial) - 1)], len(hosts)) or 1
        out.append(hosts[start : start + size])
        start, n = start + size, n + 1
    return out


def waves(groups: dict[str, list[str]], members: list[str], serial: list) -> list[dict]:
    """[{wave, batch, hosts}] in rollout order, or WavesError: a box in both waves or in none,
    a wave naming a box that is not an Arc box, a bad serial list."""
    canary, fleet = list(groups.get(CANARY) or []), list(groups.get(FLEET) or [])
    # Sets for the membership tests: lists made them grow as the fleet's size squared.
    in_canary, in_fleet, arc = set(canary), set(fleet), set(members)
    problems = check_serial(serial)
    problems += [f"{h}: in both the canary and the fleet wave" for h in canary if h in in_fleet]
    problems += [
        f"{h}: an Arc box (arc_servers) in no wave: put it in canary or fleet"
        for h in members
        if h not in in_canary and h not in in_fleet
    ]
    named = dict.fromkeys(canary + fleet)
    problems += [f"{h}: in a wave but not in arc_servers" for h in named if h not in arc]
    if not canary and not problems:
        problems.append("the canary group is empty: a rollout starts with one box")
    if problems:
        raise WavesError(problems)
    out = [{"wave": CANARY, "batch": i + 1, "hosts": [h]} for i, h in enumerate(canary)]
    out += [{"wave": FLEET, "batch": i + 1, "hosts": b} for i, b in enumerate(batches(fleet, serial))]
    return out


def wave_of(plan: list[dict]) -> dict[str, str]:
    """Host -> "canary 1", "fleet 2": where each box's turn comes."""
    return {h: f"{w['wave']} {w['batch']}" for w in plan for h in w["hosts"]}
