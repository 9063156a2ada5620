"""A fleet rollout: what each box is to do, and the record the control node keeps of it.

playbooks/rollout.yml asks every box for its status first (the release its last gate passed on),
then plan() decides per box, before anything changes anywhere:

- deploy     the box runs no release yet (never gated on one)
- upgrade    it runs an older release than the target
- redo       it was gated on the target and failed: applied again
- check      it runs the target and passed: gated again, not touched (a re-run resumes)
- downgrade  it runs a newer release: refused unless a downgrade is asked for by name
- resume     a run cut off half-way had begun to upgrade it: finished from that run's record
             (rollout_resume.py)

The record is a folder on the control node, one per run (RUN_DIR under the record root):
rollout.json (the release and the plan, written once when the run starts), one boxes/BOX.json
per box (written only by that box's own tasks, so parallel boxes never write the same file) and
halt.json (created once, by the first box that halts the run: two boxes of one batch failing
together cannot overwrite each other). load() puts them together; summary() and table() are the
end-of-run table.

Stdlib only; the adapters (plugins/modules/arcops_rollout.py) do the I/O calls.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import re
from pathlib import Path

from ..common.outputs import write_atomic
from ..common.report import print_table
from .release_id import ID, order

FORMAT = 1
HEADER = "rollout.json"
HALT = "halt.json"
BOXES = "boxes"
BENCH = "bench"  # each box's bench results from before its upgrade: the baselines after it
ROLLBACK = "rollback"  # the role variables of the release a failed box is rolled back to
LATEST = "latest"  # symlink in the record root to the newest run
# A step's results; a box's result is its last step's, in these words.
STEP_RESULTS = ("ok", "failed", "skipped")
BOX_RESULTS = {
    "upgrade": "upgraded",
    "deploy": "deployed",
    "redo": "redone",
    "downgrade": "downgraded",
    "check": "checked",
    "resume": "resumed",
}
_STEP = re.compile(r"[a-z][a-z0-9 _-]{0,39}")
_BOX = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def decide(box: dict | None, target: str | None, allow_downgrade: bool = False) -> dict:
    """{action, before, problem} for one box from its status (fleet_status.box_facts)."""
    if not target:
        return {"action": None, "before": None, "problem": "its inventory pins no release (no stack.yml)"}
    if box is None:
        return {"action": None, "before": None, "problem": "its status could not be read"}
    before = box.get("verified_release")
    passed = box.get("running") is not None and box.get("running") == before
    if not before or not ID.fullmatch(str(before)):
        return {"action": "deploy", "before": None, "problem": None}
    if before == target:
        return {"action": "check" if passed else "redo", "before": before, "problem": None}
    if order(before) == order(target):  # "2026.12.01" and "2026.12.1": one version, two spellings
        return {
            "action": None,
            "before": before,
            "problem": f"runs release {before}, the same version as the target {target} spelled "
            "otherwise: write release ids alike (no leading zeros)",
        }
    if order(before) < order(target):
        return {"action": "upgrade", "before": before, "problem": None}
    if allow_downgrade:
        return {"action": "downgrade", "before": before, "problem": None}
    return {
        "action": "downgrade",
        "before": before,
        "problem": (
            f"runs release {before}, newer than the target {target}: a downgrade is refused "
            "unless asked for (-e arcops_rollout_allow_downgrade=true)"
        ),
    }


def plan(
    wave_list: list[dict], targets: dict, boxes: dict, errors: dict, allow_downgrade: bool = False
) -> dict:
    """{boxes: [{box, wave, batch, before, target, action}], problems} in rollout order.
    WAVE_LIST is waves.waves()'s; BOXES maps a host to its box_facts, ERRORS to why it was not read."""
    rows, problems = [], []
    for w in wave_list:
        for host in w["hosts"]:
            d = decide(boxes.get(host), targets.get(host), allow_downgrade)
            if d["problem"]:
                why = errors.get(host) if boxes.get(host) is None and errors.get(host) else d["problem"]
                problems.append(f"{host}: {why}")
            rows.append(
                {
                    "box": host,
                    "wave": w["wave"],
                    "batch": w["batch"],
                    "before": d["before"],
                    "target": targets.get(host),
                    "action": d["action"],
                }
            )
    return {"boxes": rows, "problems": problems}


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def run_name(release_id: str, when: str) -> str:
    """The run folder's name: its start (UTC, sortable) and the target release."""
    return f"{when.replace('-', '').replace(':', '')}-{release_id}"


def start(root: str | os.PathLike, release_id: str, planned: dict, when: str | None = None) -> Path:
    """Make the run's folder under ROOT with its header; point ROOT/latest at it."""
    when = when or _now()
    run = Path(root) / run_name(release_id, when)
    suffix = 1
    while run.exists():  # two runs in one second: never write into another run's record
        suffix += 1
        run = Path(root) / f"{run_name(release_id, when)}.{suffix}"
    header = {
        "format": FORMAT,
        "release": release_id,
        "started": when,
        "plan": planned["boxes"],
    }
    _write(run / HEADER, header)
    for folder in (BOXES, BENCH, ROLLBACK):
        (run / folder).mkdir(exist_ok=True)
    latest = Path(root) / LATEST
    tmp = Path(root) / f".{LATEST}.tmp"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(run.name)
    os.replace(tmp, latest)
    return run


def _box_path(run: Path, box: str) -> Path:
    if not _BOX.fullmatch(box):
        raise ValueError(f"box {box!r}: not an inventory host name")
    return run / BOXES / f"{box}.json"


def halted(run: str | os.PathLike) -> dict | None:
    """The halt ({box, reason, at}) when a box halted the run, else None."""
    return _read(Path(run) / HALT) or None


def step(
    run: str | os.PathLike,
    box: str,
    name: str,
    result: str,
    detail: str = "",
    fields: dict | None = None,
    when: str | None = None,
) -> dict:
    """Append a step to BOX's record (seconds since its previous step); FIELDS set box-level
    keys (action, before, target, after, wave, batch). Returns the box's record."""
    if not _STEP.fullmatch(name):
        raise ValueError(f"step {name!r}: 1-40 lowercase letters, digits, ' ', '_' or '-'")
    if result not in STEP_RESULTS:
        raise ValueError(f"step result {result!r}: one of {', '.join(STEP_RESULTS)}")
    path = _box_path(Path(run), box)
    record = _read(path) or {"box": box, "steps": []}
    when = when or _now()
    last = record["steps"][-1]["at"] if record["steps"] else record.get("began", when)
    record.setdefault("began", when)
    seconds = max(0, int((_parse(when) - _parse(last)).total_seconds()))
    record["steps"].append({"step": name, "result": result, "at": when, "seconds": seconds, "detail": detail})
    record.update(fields or {})
    _write(path, record)
    return record


def _parse(when: str) -> dt.datetime:
    return dt.datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ")


def halt(run: str | os.PathLike, box: str, reason: str, when: str | None = None) -> dict:
    """Stop the run: no later batch starts. The first halt stands (its box is the cause): the
    file appears whole in one step (a hard link of a written file, which fails when it exists),
    so of two boxes halting at once one wins and the other reads the winner's."""
    run = Path(run)
    if not (run / HEADER).is_file():
        raise ValueError(f"{run}: not a rollout record (no {HEADER})")
    _box_path(run, box)  # the same check as a step's
    data = {"box": box, "reason": reason, "at": when or _now()}
    tmp = run / f".{HALT}.{box}.{os.getpid()}"
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    try:
        os.link(tmp, run / HALT)
    except FileExistsError:
        data = halted(run) or {}
    finally:
        tmp.unlink()
    return data


def load(run: str | os.PathLike) -> dict:
    """The whole record: the header with every box's record under boxes (plan order)."""
    run = Path(run)
    header = _read(run / HEADER)
    if not header:
        raise ValueError(f"{run}: not a rollout record (no readable {HEADER})")
    boxes = {p.stem: _read(p) for p in sorted((run / BOXES).glob("*.json"))}
    header["boxes"] = [{**planned, **boxes.get(planned["box"], {})} for planned in header.get("plan", [])]
    header["halt"] = halted(run)
    header["run"] = str(run)
    return header


def box_result(box: dict) -> str:
    """One word for what happened to a box (not reached, upgraded, rolled back, ...)."""
    steps = box.get("steps") or []
    if not steps:
        return "not reached"
    names = {s["step"]: s["result"] for s in steps}
    if names.get("rollback") == "skipped":
        return "FAILED"
    if "rollback" in names:
        if names["rollback"] == "ok" and names.get("rollback gate") == "ok":
            return "rolled back"
        return "ROLLBACK FAILED"
    if any(s["result"] == "failed" for s in steps):
        return "FAILED"
    if steps[-1]["step"] != "done":
        return "in progress"
    return BOX_RESULTS.get(box.get("action") or "", "done")


def summary(record: dict) -> dict:
    """{rows, halt, result}: a row per box and the run's result (passed, halted, in progress)."""
    rows = []
    for box in record["boxes"]:
        steps = box.get("steps") or []
        failed = next((s for s in steps if s["result"] == "failed"), None)
        rows.append(
            {
                "box": box["box"],
                "wave": f"{box['wave']} {box['batch']}",
                "action": box.get("action") or "-",
                "before": box.get("before") or "-",
                "after": box.get("after") or "-",
                "result": box_result(box),
                "seconds": sum(s["seconds"] for s in steps),
                "steps": ", ".join(f"{s['step']} {s['result']}" for s in steps) or "-",
                "why": (failed or {}).get("detail") or "",
            }
        )
    halt_ = record.get("halt")
    done = all(r["result"] not in ("in progress",) for r in rows) and all(
        r["result"] != "not reached" for r in rows
    )
    result = "halted" if halt_ else ("passed" if done else "in progress")
    return {"rows": rows, "halt": halt_, "result": result, "release": record.get("release")}


COLUMNS = ["box", "wave", "action", "before", "after", "result", "seconds", "steps"]


def table(summed: dict) -> list[str]:
    """The summary as aligned text, with the halt's reason under it."""
    out = io.StringIO()
    print_table(summed["rows"], COLUMNS, out)
    lines = [f"rollout to release {summed['release']}: {summed['result']}", *out.getvalue().splitlines()]
    h = summed["halt"] or {}
    if h:
        lines.append(f"halted by {h['box']}: {h['reason']}")
    for r in summed["rows"]:
        if r["why"] and r["box"] != h.get("box"):  # the halting box's failure is the halt's reason
            lines.append(f"{r['box']}: {r['why']}")
    return lines


def finish(run: str | os.PathLike, when: str | None = None) -> dict:
    """End the run: the summary written beside the record (summary.json, summary.txt)."""
    run = Path(run)
    summed = summary(load(run))
    summed["finished"] = when or _now()
    _write(run / "summary.json", summed)
    write_atomic(run / "summary.txt", "\n".join(table(summed)) + "\n")
    return summed
