"""What planning a rollout costs the control node as the fleet grows: 10 to 10,000 boxes.

``scripts/bench plan`` calls this. For each fleet size it times the work `arcops_rollout`'s
plan action does on the controller once every box's status is read: the waves and batches
(arcops.fleet.waves), each box's action against its release (arcops.fleet.rollout.plan: deploy,
upgrade, check, a refused downgrade), the known-stack matches of the release, and the plan's
table. The boxes are synthetic (no network): a canary, a fleet in batches of 1 then 25 %, a
tenth of them behind, one in a hundred on a newer release and refused. It reports the median
seconds per size, the cost per box, and how the cost per box at the largest size compares with
the one at a tenth of it (1.0: linear; 10: quadratic). Target: 10,000 boxes in at most 1 s.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time

from ..common.report import print_json, print_table
from ..fleet import known_stacks, rollout, waves
from . import bench_output

SIZES = (10, 100, 1000, 10_000)
TARGET_SECONDS = 1.0  # for 10,000 boxes
SERIAL = [1, "25%"]
RELEASE = {"compute_runtime": "25.48.36300.8-1~24.04", "igc": "2.24.8-1~24.04"}


def fleet(size: int) -> dict:
    """The plan action's inputs for SIZE synthetic boxes."""
    hosts = [f"arc-{n:05d}" for n in range(size)]
    boxes = {}
    for n, host in enumerate(hosts):
        before = "2026.12.1" if n % 10 else "2026.11.2"  # a tenth behind: upgrades
        if n % 100 == 99:
            before = "2027.1.1"  # newer than the target: a refused downgrade
        boxes[host] = {"verified_release": before, "running": before}
    return {
        "groups": {"canary": hosts[:1], "fleet": hosts[1:]},
        "members": hosts,
        "targets": dict.fromkeys(hosts, "2026.12.1"),
        "boxes": boxes,
    }


def plan_once(given: dict, entries: list[dict]) -> dict:
    wave_list = waves.waves(given["groups"], given["members"], SERIAL)
    planned = rollout.plan(wave_list, given["targets"], given["boxes"], {})
    planned["known"] = known_stacks.lines(known_stacks.matches(RELEASE, entries), [])
    print_table(planned["boxes"], ["box", "wave", "batch", "before", "target", "action"], io.StringIO())
    return planned


def bench(sizes: tuple[int, ...], runs: int) -> dict:
    import yaml  # a control-node tool: PyYAML comes with Ansible

    with open(known_stacks.PROJECT_FILE, encoding="utf-8") as f:
        entries = known_stacks.check(yaml.safe_load(f), "project")
    rows = []
    for size in sizes:
        given = fleet(size)
        seconds = []
        for _ in range(runs):
            start = time.perf_counter()
            planned = plan_once(given, entries)
            seconds.append(time.perf_counter() - start)
        median = statistics.median(seconds)
        rows.append(
            {
                "boxes": size,
                "median_s": round(median, 5),
                "us_per_box": round(median / size * 1e6, 2),
                "planned": len(planned["boxes"]),
                "refused": len(planned["problems"]),
            }
        )
        print(f"[bench] {size} boxes: {median:.4f} s", file=sys.stderr, flush=True)
    largest = rows[-1]
    return {
        "runs": runs,
        "serial": SERIAL,
        "sizes": rows,
        "per_box_growth": bench_output.per_box_growth(rows, "us_per_box"),
        "target_seconds": TARGET_SECONDS,
        "met": largest["boxes"] < 10_000 or largest["median_s"] <= TARGET_SECONDS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench plan", description=__doc__.splitlines()[0])
    sizes = bench_output.box_counts(100_000)
    parser.add_argument("--boxes", type=sizes, default=SIZES, help="fleet sizes (default 10,100,1000,10000)")
    parser.add_argument("--runs", "-n", type=int, choices=range(1, 101), default=5, metavar="1..100")
    bench_output.add_options(parser)
    args = parser.parse_args(argv)
    json_out = bench_output.json_target(args)  # refused before any run
    result = bench(args.boxes, args.runs)
    bench_output.write(json_out, result)
    if args.format == "json":
        print_json(result)
    else:
        print_table(result["sizes"], ["boxes", "median_s", "us_per_box", "planned", "refused"])
        verdict = "met" if result["met"] else "NOT met"
        print(f"per-box cost at the largest size over a tenth of it: {result['per_box_growth']} (1: linear)")
        print(f"target: 10,000 boxes in at most {TARGET_SECONDS} s: {verdict}")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
