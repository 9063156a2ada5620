"""The no-op re-run benchmark: a converged playbook run again N times, against the connection floor.

``scripts/bench noop`` converges the lab, then calls this. Each playbook run and each floor run
(``ansible -m ansible.builtin.ping`` on the same hosts) is timed from the outside and read back
through Ansible's json callback, so the changed count is Ansible's own, not a parse of its
screen output. The ratio median(playbook) / median(ping) is what a re-run costs beyond merely
reaching the boxes; both are measured in the same run, on the same hosts.

With ``--boxes 2,4,8`` it does so for lab fleets of each size (``labfleet``: the lab's boxes and
more made like them), converging each first, and fits the curve: the fixed part of a run, the
cost of each box, and how the cost of a box grows from the smallest sizes to the largest.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..common.report import print_json, print_table
from . import bench_output, labfleet

# A converged run may cost at most this many times the connection floor at every size, and the
# cost of one more box between the largest sizes at most GROWTH_LIMIT times the cost of one more
# box between the smallest (1.0: linear; the margin is the machine's noise).
TARGET_RATIO = 3.0
GROWTH_LIMIT = 1.5
MOST_BOXES = 30  # the lab's network and this machine's memory


class BenchError(RuntimeError):
    """A run failed or its output could not be read."""


@dataclass(frozen=True)
class Run:
    kind: str  # "playbook" | "ping" | "parse" (ansible-playbook --list-tasks: reading the playbook alone)
    seconds: float
    changed: int
    failed: int
    unreachable: int
    hosts: int
    cpu_s: float = 0.0  # the control node's CPU: ansible's processes and their ssh (not the boxes')


def recap(json_output: str, kind: str, seconds: float) -> Run:
    """Totals from the json stdout callback's ``stats`` (one entry per host)."""
    start = json_output.find("{")
    try:
        data = json.loads(json_output[start:]) if start >= 0 else None
    except json.JSONDecodeError as e:
        raise BenchError(f"{kind} run: its json output does not parse: {e}") from None
    stats = data.get("stats") if isinstance(data, dict) else None
    if not isinstance(stats, dict) or not stats:
        raise BenchError(f"{kind} run: no per-host stats in its json output")
    total = {"changed": 0, "failures": 0, "unreachable": 0}
    for host, counts in stats.items():
        if not isinstance(counts, dict):
            raise BenchError(f"{kind} run: stats of {host!r} are not a mapping")
        for key in total:
            value = counts.get(key, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise BenchError(f"{kind} run: stats of {host!r} have a bad {key!r}: {value!r}")
            total[key] += value
    return Run(kind, round(seconds, 2), total["changed"], total["failures"], total["unreachable"], len(stats))


def summary(runs: list[Run]) -> dict:
    """Medians, the ratio to the floor, and whether the targets hold."""
    plays = [r for r in runs if r.kind == "playbook"]
    pings = [r for r in runs if r.kind == "ping"]
    if not plays or not pings:
        raise BenchError("need at least one playbook run and one ping run")
    play_median = statistics.median(r.seconds for r in plays)
    ping_median = statistics.median(r.seconds for r in pings)
    ratio = play_median / ping_median if ping_median > 0 else float("inf")
    changed = sum(r.changed for r in plays)
    failed = sum(r.failed + r.unreachable for r in runs)
    parses = [r.seconds for r in runs if r.kind == "parse"]
    return {
        "runs": len(plays),
        "hosts": plays[0].hosts,
        "playbook_median_s": round(play_median, 2),
        "ping_median_s": round(ping_median, 2),
        # What the control node spends before any box is asked, and its CPU over a whole run.
        **({"parse_median_s": round(statistics.median(parses), 2)} if parses else {}),
        "playbook_cpu_median_s": round(statistics.median(r.cpu_s for r in plays), 2),
        "ratio": round(ratio, 2),
        "changed": changed,
        "failed": failed,
        "target_ratio": TARGET_RATIO,
        "targets_met": ratio <= TARGET_RATIO and changed == failed == 0,
    }


def _line(points: list[tuple[int, float]]) -> dict:
    """The least-squares line through (boxes, seconds): its fixed part and its cost per box."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return {"fixed_s": round(mean_y - slope * mean_x, 3), "per_box_s": round(slope, 3)}


def curve(sizes: list[dict]) -> dict:
    """How a no-op run and the floor grow with the boxes (SIZES: summaries with "hosts", at least
    two sizes): each one's line, the marginal cost of a box between neighbouring sizes, and the
    growth (the last marginal cost over the first; None when the first is not above 0)."""
    if len({s["hosts"] for s in sizes}) < 2:
        raise BenchError("a curve needs at least two fleet sizes")
    out = {}
    for kind in ("playbook", "ping", "playbook_cpu"):
        points = [(s["hosts"], s[f"{kind}_median_s"]) for s in sizes]
        out[kind] = _line(points)
    plays = [(s["hosts"], s["playbook_median_s"]) for s in sizes]
    marginal = [round((b[1] - a[1]) / (b[0] - a[0]), 3) for a, b in itertools.pairwise(plays)]
    growth = round(marginal[-1] / marginal[0], 2) if marginal[0] > 0 else None
    out["playbook_marginal_s"] = marginal
    out["growth"] = growth
    out["growth_limit"] = GROWTH_LIMIT
    out["met"] = all(s["targets_met"] for s in sizes) and growth is not None and growth <= GROWTH_LIMIT
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tail(text: str) -> str:
    """The last of a run's output, on one line (what an error quotes)."""
    return " ".join(text[-400:].split())


def _timed(argv: list[str], kind: str, env: dict[str, str]) -> Run:
    cpu, start = _children_cpu(), time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    seconds, cpu = time.monotonic() - start, _children_cpu() - cpu
    if kind == "parse":
        if done.returncode != 0:
            raise BenchError(f"parse run exited {done.returncode}: {_tail(done.stderr)}")
        return Run(kind, round(seconds, 2), 0, 0, 0, 0, round(cpu, 2))
    try:
        run = recap(done.stdout, kind, seconds)
    except BenchError as e:
        raise BenchError(f"{e} (exit {done.returncode}: {_tail(done.stderr or done.stdout)})") from None
    if done.returncode != 0 and not (run.failed or run.unreachable):
        raise BenchError(f"{kind} run exited {done.returncode}: {_tail(done.stderr)}")
    return replace(run, cpu_s=round(cpu, 2))


def bench(
    ansible_bin: Path, inventory: str, playbook: str, runs: int, limit: str, extra: list[str]
) -> list[Run]:
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)  # timing callbacks would add their own cost
    play = [str(ansible_bin / "ansible-playbook"), "-i", inventory, playbook, "-l", limit, *extra]
    ping = [str(ansible_bin / "ansible"), "-i", inventory, limit, "-m", "ansible.builtin.ping"]
    out: list[Run] = []
    for i in range(runs):  # interleaved, so a slow phase of the machine hits all alike
        for kind, argv in (("playbook", play), ("ping", ping), ("parse", [*play, "--list-tasks"])):
            run = _timed(argv, kind, env)
            out.append(run)
            print(
                f"[bench] {i + 1}/{runs} {kind:<8} {run.seconds:6.2f}s cpu {run.cpu_s:6.2f}s"
                f" changed={run.changed} failed={run.failed} unreachable={run.unreachable}",
                file=sys.stderr,
                flush=True,
            )
    return out


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be 1..100, not {value}")
    return value


def converge(ansible_bin: Path, inventory: Path) -> None:
    """Bring up INVENTORY's boxes and run site.yml on them (the lab's own are already converged:
    for them both are no-ops). Their output goes to stderr: the user sees the progress."""
    for playbook in ("playbooks/lab_up.yml", "site.yml"):
        print(f"[bench] converging {inventory.name}: {playbook}", file=sys.stderr, flush=True)
        argv = [str(ansible_bin / "ansible-playbook"), "-i", str(inventory), playbook]
        if subprocess.run(argv, stdout=sys.stderr, check=False).returncode != 0:
            raise BenchError(f"converging {inventory}: {playbook} failed")


def take_down(ansible_bin: Path, inventory: Path, boxes: list[str]) -> None:
    """Remove BOXES (the ones made for the bench) and their vLLM containers; the lab's own stay."""
    if not boxes:
        return
    print(
        f"[bench] taking down the boxes made for the bench: {', '.join(boxes)}", file=sys.stderr, flush=True
    )
    argv = [str(ansible_bin / "ansible-playbook"), "-i", str(inventory), "playbooks/lab_down.yml"]
    argv += ["--tags", "boxes", "-e", json.dumps({"lab_down_boxes": boxes})]
    if subprocess.run(argv, stdout=sys.stderr, check=False).returncode != 0:
        raise BenchError(
            f"taking down {', '.join(boxes)} failed: ansible-playbook -i {inventory} playbooks/lab_down.yml"
        )


def _table(sizes: list[dict], playbook: str) -> None:
    rows = [
        {
            "boxes": s["hosts"],
            f"{playbook} (no-op) s": s["playbook_median_s"],
            "ping (floor) s": s["ping_median_s"],
            "ratio": s["ratio"],
            "reading the playbook s": s.get("parse_median_s", "-"),
            "control-node CPU s": s["playbook_cpu_median_s"],
            "changed": s["changed"],
        }
        for s in sizes
    ]
    print_table(rows, list(rows[0]))
    for s in sizes:
        met = "met" if s["targets_met"] else "NOT met"
        target = f"target (ratio <= {TARGET_RATIO:g}, changed 0): {met}"
        print(f"{s['hosts']} boxes: ratio {s['ratio']}x over {s['runs']} runs; {target}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench noop", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", "-n", type=_positive, default=5, help="playbook and ping runs (default 5)")
    parser.add_argument("--inventory", "-i", default="inventories/lab")
    parser.add_argument(
        "--boxes",
        type=bench_output.box_counts(MOST_BOXES),
        help="lab fleets of these sizes (e.g. 2,4,8), each made from --inventory and converged first",
    )
    parser.add_argument("--playbook", default="site.yml")
    parser.add_argument("--limit", "-l", default="arc_servers", help="host pattern (default arc_servers)")
    bench_output.add_options(parser, "the runs and summary")
    parser.add_argument("--converge", metavar="CMD", help="run this first (scripts/lab-up), after the checks")
    parser.add_argument("extra", nargs="*", help="more ansible-playbook arguments (after --)")
    args = parser.parse_args(argv)
    ansible_bin = Path(sys.executable).parent
    json_out = bench_output.json_target(args)  # refused before any run
    if args.boxes and len(args.boxes) < 2:
        parser.error(f"--boxes {args.boxes[0]}: a curve needs two sizes or more")
    if args.converge:
        print(f"[bench] converging first: {args.converge}", file=sys.stderr, flush=True)
        if subprocess.run([args.converge], check=False).returncode != 0:
            print(f"bench: {args.converge} failed", file=sys.stderr)
            return 1
    try:
        if args.boxes:
            sizes, runs = [], []
            for boxes in args.boxes:
                folder = Path("build/bench-noop") / f"boxes-{boxes}"
                inventory = labfleet.write_inventory(Path(args.inventory), boxes, folder)
                converge(ansible_bin, inventory)
                these = bench(ansible_bin, str(inventory), args.playbook, args.runs, args.limit, args.extra)
                sizes.append(summary(these))
                runs += [{"boxes": boxes, **asdict(r)} for r in these]
            result = {"sizes": sizes, "curve": curve(sizes), "runs": runs}
            # Leave the lab as it was: a later run (or a smaller size) measures without them.
            take_down(ansible_bin, inventory, labfleet.added(Path(args.inventory), max(args.boxes)))
        else:
            these = bench(ansible_bin, args.inventory, args.playbook, args.runs, args.limit, args.extra)
            sizes = [summary(these)]
            result = {"summary": sizes[0], "runs": [asdict(r) for r in these]}
    except (BenchError, labfleet.LabFleetError, OSError) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    bench_output.write(json_out, result)
    if args.format == "json":
        print_json(result)
    else:
        _table(sizes, args.playbook)
        if "curve" in result:
            c = result["curve"]
            print(
                f"no-op run {c['playbook']['fixed_s']} s + {c['playbook']['per_box_s']} s a box; floor "
                f"{c['ping']['fixed_s']} s + {c['ping']['per_box_s']} s a box; a box's cost grew "
                f"{c['growth']}x from the smallest sizes to the largest (limit {GROWTH_LIMIT:g}); the control"
                f" node's CPU {c['playbook_cpu']['fixed_s']} s + {c['playbook_cpu']['per_box_s']} s a box"
            )
    return 0 if all(s["changed"] == 0 and s["failed"] == 0 for s in sizes) else 1


if __name__ == "__main__":
    sys.exit(main())
