"""A rollout cut off half-way (the control node died: no summary, no halt), resumed from its record.

A box the cut run had already gated and begun to change (drained, or part-way through its
stage roles) cannot be gated "as it runs" again: its services are stopped and its pins half
applied, so that gate would fail and halt a rollout that only needs finishing. Such a box is
planned `resume`: no gate before, the baselines its gate before took in the cut run, then the
rest of an upgrade (drain, apply, gate, bench). Boxes the cut run finished are on the target and
gated only (`check`); boxes it never changed are planned as ever. So a resumed rollout never
moves a box twice. A resume cut off in its turn (the control node died again, or the box lost
power and dropped out of the run) is resumed again, however far it got.

Stdlib only; arcops_rollout's plan action calls it with the record root.
"""

from __future__ import annotations

from pathlib import Path

from . import rollout

# Steps after which the box has changed (or may have): the gate before passed and its baselines
# were kept. A box cut off before those is untouched and simply planned again.
_CHANGED = ("gate before", "drain", "apply")
RESUMABLE = ("upgrade", "downgrade")
# A record damaged, cut short or of another version's shape: read as nothing to resume.
_DAMAGED = (ValueError, TypeError, KeyError, AttributeError)


def cut_off_run(root: str | Path) -> Path | None:
    """ROOT's newest run when it was cut off: not finished (no summary.json) and not halted."""
    latest = Path(root) / rollout.LATEST
    if not latest.is_symlink():
        return None
    run = latest.resolve()
    if not (run / rollout.HEADER).is_file() or (run / "summary.json").exists() or rollout.halted(run):
        return None
    return run


def _baselines(run: Path, box: str) -> dict[str, str]:
    """BOX's bench/BOX.SERVICE.json files by service. A service name has no dot, so box a's
    glob never takes box a.lab's files."""
    found = {}
    for p in sorted((run / rollout.BENCH).glob(f"{box}.*.json")):
        service = p.name[len(box) + 1 : -len(".json")]
        if "." not in service and p.is_file():
            found[service] = str(p)
    return found


def _kept(baselines) -> dict[str, str]:
    """An earlier resume's baselines as the record kept them (service -> file), or none."""
    if not isinstance(baselines, dict):
        return {}
    return {k: v for k, v in baselines.items() if isinstance(k, str) and isinstance(v, str)}


def resumable(run: Path) -> dict[str, dict]:
    """Boxes of the cut RUN that had changed and not finished: box -> {run, step, was, before,
    baselines}. A record damaged or of another shape resumes nothing (its boxes are planned anew)."""
    try:
        return _resumable(run, rollout.load(run))
    except _DAMAGED:
        return {}


def _resumable(run: Path, record: dict) -> dict[str, dict]:
    out = {}
    for box in record["boxes"]:
        steps = [s for s in box.get("steps") or [] if isinstance(s, dict)]
        names = [s.get("step") for s in steps]
        if any(s.get("result") != "ok" for s in steps) or not steps or names[-1] == "done":
            continue
        action = box.get("action")
        if action == "resume":
            # Cut off again while it was being resumed: it had changed in an earlier run, so it
            # is resumed again however far this run got, as that run planned it, with the
            # baselines its gate before kept there.
            earlier = box.get("resume")
            if not isinstance(earlier, dict) or earlier.get("was") not in RESUMABLE:
                continue
            was, baselines = earlier["was"], _kept(earlier.get("baselines"))
        elif action in RESUMABLE and any(n in _CHANGED for n in names):
            was, baselines = action, _baselines(run, box["box"])
        else:
            continue
        out[box["box"]] = {
            "run": run.name,
            "step": names[-1],
            "was": was,
            "before": box.get("before"),
            "baselines": baselines,
        }
    return out


def resume(planned: dict, run: Path | None) -> list[str]:
    """Make the cut RUN's unfinished boxes `resume` in PLANNED (rollout.plan's), where the box is
    planned as that run had it (same action, release before and target); a line about each."""
    if run is None:
        return []
    try:
        record = rollout.load(run)  # read once: its release and its boxes
        release, cut = record.get("release"), _resumable(run, record)
    except _DAMAGED:
        return []
    lines = []
    for row in planned["boxes"]:
        info = cut.get(row["box"])
        planned_as = (row["action"], row["before"], row["target"])
        if info and planned_as == (info["was"], info["before"], release):
            row["action"], row["resume"] = "resume", info
            lines.append(f"{row['box']}: resumes run {info['run']}, cut off after its {info['step']}")
    return lines
