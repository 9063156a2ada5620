"""The fleet's state as Prometheus metrics, written on the control node by `arcops fleet report
--metrics FILE` into its node_exporter's textfile folder: what only the control node knows (each
box against its target release, the release's known-stack matches, the last rollout and its
halt), for the fleet alerts of monitoring/prometheus/arcops.rules.yml. The boxes' own state is
each box's `arcops operate metrics`.

Built from what `arcops fleet status --json` prints, release.load's answer and rollout.load's
record. Stdlib only.
"""

from __future__ import annotations

from ..common.prometheus_text import Family
from . import known_stacks, rollout

PREFIX = "arcops_fleet_"


def _known(found: dict | None) -> Family:
    family = Family(
        f"{PREFIX}known_stack",
        "gauge",
        "The target release matches a known stack (value 1), by entry and verdict (bad, fine, overridden).",
    )
    for line in (found or {}).get("known") or []:
        parsed = known_stacks.line_verdict(line)
        if parsed:
            family.add(1, release=found.get("id") or "", entry=parsed[0], verdict=parsed[1])
    return family


def _boxes(status: dict) -> list[Family]:
    on_target = Family(
        f"{PREFIX}box_on_target",
        "gauge",
        "1 when the box runs its target release (its last gate passed on it), 0 when not; per box.",
    )
    reachable = Family(f"{PREFIX}box_reachable", "gauge", "1 when the box could be read, 0 when not.")
    for row in status.get("rows") or []:
        if not isinstance(row, dict) or not isinstance(row.get("box"), str):
            continue
        reachable.add(0 if row.get("error") else 1, box=row["box"])
        if not row.get("error") and isinstance(row.get("on_target"), bool):
            on_target.add(
                int(row["on_target"]),
                box=row["box"],
                running=str(row.get("running") or ""),
                target=str(row.get("target") or ""),
            )
    return [on_target, reachable]


def _rollout(record: dict | None) -> list[Family]:
    info = Family(f"{PREFIX}rollout_info", "gauge", "The last rollout (value 1): its release and result.")
    halted = Family(
        f"{PREFIX}rollout_halted",
        "gauge",
        "1 when the last rollout was halted (box: the box that halted it).",
    )
    if record:
        summed = rollout.summary(record)
        halt = summed["halt"] or {}
        release = str(summed.get("release") or "")
        info.add(1, release=release, result=summed["result"])
        halted.add(1 if halt else 0, release=release, box=str(halt.get("box") or ""))
    return [info, halted]


def collect(status: dict, found: dict | None, record: dict | None, now: float) -> list[Family]:
    stamp = Family(f"{PREFIX}report_timestamp_seconds", "gauge", "When the fleet's metrics were written.")
    stamp.add(now)
    return [*_boxes(status), _known(found), *_rollout(record), stamp]
