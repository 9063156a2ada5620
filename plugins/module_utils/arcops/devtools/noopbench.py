"""The no-op re-run benchmark: a converged playbook run again N times, against the connection floor.

``scripts/bench noop`` converges the lab, then calls this. Each playbook run and each floor run
(``ansible -m ansible.builtin.ping`` on the same hosts) is timed from the outside and read back
through Ansible's json callback, so the changed count is Ansible's own, not a parse of its
screen output. The ratio median(playbook) / median(ping) is what a re-run costs beyond merely
reaching the boxes; both are measured in the same run, on the same hosts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..common.report import print_json, print_table
from . import bench_output

# What a well-kept converged playbook costs on the lab's two boxes (issue targets).
TARGET_MEDIAN_S = 15.0
TARGET_RATIO = 4.0


class BenchError(RuntimeError):
    """A run failed or its output could not be read."""


@dataclass(frozen=True)
class Run:
    kind: str  # "playbook" | "ping"
    seconds: float
    changed: int
    failed: int
    unreachable: int
    hosts: int


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
    return {
        "runs": len(plays),
        "hosts": plays[0].hosts,
        "playbook_median_s": round(play_median, 2),
        "ping_median_s": round(ping_median, 2),
        "ratio": round(ratio, 2),
        "changed": changed,
        "failed": failed,
        "target_median_s": TARGET_MEDIAN_S,
        "target_ratio": TARGET_RATIO,
        "targets_met": play_median <= TARGET_MEDIAN_S and ratio <= TARGET_RATIO and changed == failed == 0,
    }


def _timed(argv: list[str], kind: str, env: dict[str, str]) -> Run:
    start = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    try:
        run = recap(done.stdout, kind, seconds)
    except BenchError as e:
        tail = " ".join((done.stderr or done.stdout)[-400:].split())
        raise BenchError(f"{e} (exit {done.returncode}: {tail})") from None
    if done.returncode != 0 and not (run.failed or run.unreachable):
        raise BenchError(f"{kind} run exited {done.returncode}: {' '.join(done.stderr[-400:].split())}")
    return run


def bench(
    ansible_bin: Path, inventory: str, playbook: str, runs: int, limit: str, extra: list[str]
) -> list[Run]:
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)  # timing callbacks would add their own cost
    play = [str(ansible_bin / "ansible-playbook"), "-i", inventory, playbook, "-l", limit, *extra]
    ping = [str(ansible_bin / "ansible"), "-i", inventory, limit, "-m", "ansible.builtin.ping"]
    out: list[Run] = []
    for i in range(runs):  # interleaved, so a slow phase of the machine hits both alike
        for kind, argv in (("playbook", play), ("ping", ping)):
            run = _timed(argv, kind, env)
            out.append(run)
            print(
                f"[bench] {i + 1}/{runs} {kind:<8} {run.seconds:6.2f}s changed={run.changed}"
                f" failed={run.failed} unreachable={run.unreachable}",
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench noop", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", "-n", type=_positive, default=5, help="playbook and ping runs (default 5)")
    parser.add_argument("--inventory", "-i", default="inventories/lab")
    parser.add_argument("--playbook", default="site.yml")
    parser.add_argument("--limit", "-l", default="arc_servers", help="host pattern (default arc_servers)")
    bench_output.add_options(parser, "the runs and summary")
    parser.add_argument("--converge", metavar="CMD", help="run this first (scripts/lab-up), after the checks")
    parser.add_argument("extra", nargs="*", help="more ansible-playbook arguments (after --)")
    args = parser.parse_args(argv)
    ansible_bin = Path(sys.executable).parent
    json_out = bench_output.json_target(args)  # refused before any run
    if args.converge:
        print(f"[bench] converging first: {args.converge}", file=sys.stderr, flush=True)
        if subprocess.run([args.converge], check=False).returncode != 0:
            print(f"bench: {args.converge} failed", file=sys.stderr)
            return 1
    try:
        runs = bench(ansible_bin, args.inventory, args.playbook, args.runs, args.limit, args.extra)
        result = {"summary": summary(runs), "runs": [asdict(r) for r in runs]}
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    bench_output.write(json_out, result)
    s = result["summary"]
    if args.format == "json":
        print_json(result)
    else:
        print_table(
            [
                {
                    "what": f"{args.playbook} (no-op)",
                    "median_s": s["playbook_median_s"],
                    "changed": s["changed"],
                },
                {"what": "ansible -m ping (floor)", "median_s": s["ping_median_s"], "changed": "-"},
            ],
            ["what", "median_s", "changed"],
        )
        met = "met" if s["targets_met"] else "NOT met"
        print(
            f"ratio {s['ratio']}x over {s['runs']} runs on {s['hosts']} hosts; targets (median <= "
            f"{TARGET_MEDIAN_S:g} s, ratio <= {TARGET_RATIO:g}, changed 0): {met}"
        )
    return 0 if s["changed"] == 0 and s["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
