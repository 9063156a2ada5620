"""One row per box for `arcops fleet status`: the release it runs and the one it is meant to run,
what it booted (kernel, GuC loaded per card), the image, its last vLLM start, its last gate, and
the xe resets of this boot. The box's part is read on the box (box_facts: stdlib, inside the
arcops_status module) from the same records the stages publish; the control node adds the
target release and the wave, and prints the table.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

from ..box import xe_events
from ..common.inputs import InputError
from ..common.numbers import MAX_COUNT, MAX_RATE, from_text, number
from ..common.records import as_dict as _dict
from ..common.records import read_published
from ..common.report import print_table
from ..stages.status import read_start_report
from ..vllm import out_of_service
from . import waves

COLUMNS = [
    *("box", "wave", "running", "target", "kernel", "guc", "card_fw", "image"),
    *("start", "gate", "bench", "xe_resets"),
]
# The card firmware compared across the fleet (box.card_firmware's kinds): the flash firmware and
# the option ROM's code; a box whose cards differ from what most boxes run is flagged as drift.
DRIFT_KINDS = ("fw", "oprom_code")


# The start column's word for a box kept stopped for a wedged GPU (the fleet page marks it).
OUT_OF_SERVICE = "OUT OF SERVICE"


def last_start(report_dir: Any) -> dict | None:
    """The watchdog's latest report (result, exit code, attempts), or None when there is none."""
    if not isinstance(report_dir, str) or not report_dir:
        return None
    try:
        report = read_start_report(report_dir)
    except (InputError, ValueError) as e:
        return {"result": f"unreadable ({' '.join(str(e).split())})"}
    if report is None:
        return None
    report = _dict(report)
    return {"result": report.get("result"), "exit_code": report.get("exit_code")}


def resets(lines) -> int:
    """Engine and GT resets in kernel log lines (this boot's journal, never dmesg)."""
    found = xe_events.count(lines)["by_kind"]
    return sum(found.get(kind, 0) for kind in xe_events.RESET_KINDS)


def box_facts(
    records: dict, facts: dict, start: dict | None, xe_resets: int | None, wedged: dict | None = None
) -> dict:
    """What the box says of itself, in the columns' terms (records as records.read_published;
    WEDGED the out-of-service mark, which the start column shows first)."""
    verify = _dict(records.get("verify"))
    vllm = _dict(records.get("vllm_service"))
    gucs = [str(g.get("guc_loaded") or "-") for g in facts.get("gpus") or [] if isinstance(g, dict)]
    gate = "-"
    if verify.get("gate") is False:
        gate = "not gated"
    elif verify:
        parts = [
            f"{name} {_dict(t).get('right', '-')}/{_dict(t).get('prompts', '-')}"
            for name, t in sorted(_dict(verify.get("targets")).items())
        ]
        gate = ("passed" if verify.get("passed") is True else "FAILED") + (
            f" ({', '.join(parts)})" if parts else ""
        )
    flashed = _dict(_dict(facts.get("card_firmware")).get("cards"))
    return {
        "card_fw": {
            str(a): {k: v for k, v in _dict(kinds).items() if k in DRIFT_KINDS and isinstance(v, str)}
            for a, kinds in sorted(flashed.items())
        },
        "bench": bench_figure(verify),
        "running": verify.get("release") if verify.get("passed") is True else None,
        "verified_release": verify.get("release"),
        "kernel": _dict(facts.get("host")).get("kernel"),
        "guc": gucs,
        "image": vllm.get("image"),
        "image_id": (vllm.get("image_digest") or vllm.get("image_id") or "")[:19] or None,
        "start": (
            (
                f"{OUT_OF_SERVICE} (stuck after a restart)"
                if wedged.get("state") == "stuck"
                else f"{OUT_OF_SERVICE} (wedged {', '.join(wedged.get('cards') or []) or 'GPU'})"
            )
            if wedged
            else (start or {}).get("result")
        ),
        "gate": gate,
        "xe_resets": xe_resets,
    }


def bench_figure(verify: dict) -> str | None:
    """The last bench of each service the verify record keeps: decode output tok/s at its
    fewest streams ("vllm_service 73.7 tok/s @1"), or None when no bench ran."""
    parts = []
    for name, target in sorted(_dict(verify.get("targets")).items()):
        decode = _dict(_dict(_dict(target).get("bench")).get("decode"))
        try:
            streams = {
                int(from_text(str(k), "streams", 1, MAX_COUNT, whole=True)): v for k, v in decode.items()
            }
            fewest = min(streams)
            parts.append(f"{name} {number(streams[fewest], 'tok/s', 0, MAX_RATE):g} tok/s @{fewest}")
        except ValueError:  # no figures, or not numbers that make sense: nothing to show
            continue
    return ", ".join(parts) or None


def read_box(fact_dir: str, facts: dict, kernel_lines) -> dict:
    """box_facts from the box's own records, its latest start report and this boot's journal."""
    records = read_published(fact_dir)
    records = {k: (v if isinstance(v, dict) else None) for k, v in records.items()}
    start = last_start(_dict(records.get("vllm_service")).get("report_dir"))
    wedged = out_of_service.read(Path(out_of_service.MARK))
    return box_facts(records, facts, start, resets(kernel_lines), wedged)


def row(host: str, wave: str, target: str | None, box: dict | None, error: str | None = None) -> dict:
    """One table row; a box that could not be read says why in place of its facts."""
    if box is None:
        return {
            "box": host,
            "wave": wave,
            "running": "-",
            "target": target or "-",
            "error": error or "unreachable",
        }
    running = box["running"] or (
        f"{box['verified_release']} (gate failed)" if box["verified_release"] else "-"
    )
    return {
        "box": host,
        "wave": wave,
        "running": running,
        "target": target or "-",
        "kernel": box["kernel"] or "-",
        "guc": ", ".join(box["guc"]) or "-",
        "card_fw": ", ".join(sorted({v for kind, v in _signature(box) if kind == "fw"}) or ["-"]),
        "image": " ".join(x for x in (box["image"], box["image_id"]) if x) or "-",
        "start": box["start"] or "-",
        "gate": box["gate"],
        "bench": box.get("bench") or "-",
        "xe_resets": "-" if box["xe_resets"] is None else box["xe_resets"],
        "on_target": target is not None and box["running"] == target,
    }


def fleet(groups: dict, members: list[str], serial: list, targets: dict, boxes: dict, errors: dict) -> dict:
    """Every Arc box's row in rollout order ({rows, problems}): BOXES maps a host to its
    box_facts, ERRORS a host that could not be read to why; a box outside the waves still shows."""
    try:
        order = waves.wave_of(waves.waves(groups, members, serial))
        problems: list[str] = []
    except waves.WavesError as e:
        order, problems = {}, e.problems
    hosts = [h for h in order if h in members] + [h for h in members if h not in order]
    rows = [row(h, order.get(h, "-"), targets.get(h), boxes.get(h), errors.get(h)) for h in hosts]
    return {"rows": rows, "problems": problems, "firmware_drift": mark_firmware_drift(rows, boxes)}


def _signature(box: dict | None) -> tuple:
    """What a box's cards run, as (kind, version) pairs over every card; () when not read."""
    cards = _dict(_dict(box).get("card_fw"))
    return tuple(sorted({(k, v) for kinds in cards.values() for k, v in _dict(kinds).items()}))


def _said(signature: tuple) -> str:
    return ", ".join(f"{k} {v}" for k, v in signature)


def mark_firmware_drift(rows: list[dict], boxes: dict) -> list[str]:
    """Flag (in ROWS, card_fw "... (drift)") each box whose cards' firmware is not what most boxes
    with it read run (a tie goes to the newest-sorting); one line per such box."""
    signatures = {r["box"]: _signature(boxes.get(r["box"])) for r in rows}
    counts = Counter(s for s in signatures.values() if s)
    if len(counts) < 2:
        return []
    usual = max(counts, key=lambda s: (counts[s], s))
    lines = []
    for r in rows:
        found = signatures[r["box"]]
        if found and found != usual:
            r["card_fw"] = f"{r['card_fw']} (drift)"
            r["card_fw_drift"] = True
            lines.append(f"{r['box']}: card firmware {_said(found)}; most boxes run {_said(usual)}")
    return lines


def table(rows: list[dict]) -> list[str]:
    """The rows as aligned text (an unreachable box shows its error in place of its facts)."""
    out = io.StringIO()
    shown = [r if "error" not in r else {**r, "kernel": f"({r['error']})"} for r in rows]
    print_table(shown, COLUMNS, out)
    return out.getvalue().splitlines()
