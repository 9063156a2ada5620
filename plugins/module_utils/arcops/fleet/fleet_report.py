"""The fleet's page for `arcops fleet report`: every box against the release (drift marked),
the release's known-stack matches, and the last rollout (a halt said first). Built from what
`arcops fleet status --json` prints, release.load's answer and rollout.load's record.

Stdlib only (common.html_page).
"""

from __future__ import annotations

from collections import Counter

from ..common import html_page as h
from ..common.times import utc_iso
from . import fleet_status, known_stacks, rollout

STATUS_COLUMNS = ["box", *fleet_status.COLUMNS[1:], "error"]


def _drifted(row: dict) -> bool:
    return row.get("on_target") is False and not row.get("error")


def _boxes(status: dict) -> list[str]:
    rows = [r for r in status.get("rows") or [] if isinstance(r, dict)]
    marks = {}
    for n, r in enumerate(rows):
        out = str(r.get("start", "")).startswith(fleet_status.OUT_OF_SERVICE)
        if out or r.get("error") or str(r.get("gate", "")).startswith("FAILED"):
            marks[n] = "bad"
        elif _drifted(r) or r.get("card_fw_drift") or r.get("xe_resets") not in (0, "0", "-", None):
            marks[n] = "warn"
    drift = [r["box"] for r in rows if _drifted(r)]
    parts = []
    if drift:
        parts.append(h.banner(f"{len(drift)} box(es) not on the target release: {', '.join(drift)}", "warn"))
    elif rows:
        parts.append(h.banner("every box runs its target release", "ok"))
    parts += [h.banner(f"waves: {p}", "warn") for p in status.get("problems") or []]
    parts += [h.banner(f"card firmware drift: {d}", "warn") for d in status.get("firmware_drift") or []]
    parts.append(h.table(rows, STATUS_COLUMNS, marks, ident="boxes"))
    counts = Counter(str(r.get("running") or "-") for r in rows)
    if counts:
        parts.append(h.bars("boxes per running release", sorted(counts.items()), "boxes"))
    return parts


def _known(found: dict | None) -> list[str]:
    if not found:
        return [h.banner("no release file given: known stacks not checked")]
    known = [str(k) for k in found.get("known") or []]
    # A bad match deployed by override is still a known-bad stack on the boxes.
    bad = [k for k in known if (known_stacks.line_verdict(k) or ("", ""))[1] in ("bad", "overridden")]
    kind = "bad" if bad else ("warn" if known else "ok")
    head = h.banner(f"release {found.get('id', '-')}: {len(known)} known-stack match(es)", kind)
    return [head, *(h.banner(k, "bad" if k in bad else "") for k in known)]


def _rollout(record: dict | None) -> list[str]:
    if not record:
        return [h.banner("no rollout record given")]
    summed = rollout.summary(record)
    halt = summed["halt"] or {}
    parts = []
    if halt:
        parts.append(h.banner(f"HALTED by {halt.get('box')}: {halt.get('reason')}", "bad"))
    else:
        kind = "ok" if summed["result"] == "passed" else "warn"
        parts.append(h.banner(f"rollout to {summed['release']}: {summed['result']}", kind))
    marks = {
        n: "bad"
        for n, r in enumerate(summed["rows"])
        if r["result"] in ("FAILED", "ROLLBACK FAILED", "rolled back")
    }
    parts.append(h.table(summed["rows"], [*rollout.COLUMNS, "why"], marks, ident="rollout"))
    return parts


def page(status: dict, release_found: dict | None, record: dict | None, now: float, title: str) -> str:
    when = utc_iso(now)
    return h.page(
        f"arcops fleet: {title}",
        f"written {when} by arcops fleet report",
        [
            h.section("Boxes", *_boxes(status), ident="boxes-section"),
            h.section("Release and known stacks", *_known(release_found), ident="release"),
            h.section("Last rollout", *_rollout(record), ident="rollout-section"),
        ],
    )
