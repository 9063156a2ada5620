"""What the Level Zero residency filter costs a process: the same calls with and without it.

``scripts/bench residency`` calls this. It builds the filter (arcops.vllm.residency_shim) and the
test stub of Level Zero's loader with the program that calls it (tests/fixtures/l0_residency),
then runs the program's benchmark mode R times each way: N calls the filter never sees (bound
straight to the loader: they must cost what they cost without it) and N own-device residency
calls (the filter asks the loader who owns the pointer, then passes the call on). It reports
the median nanoseconds per call and the ratios, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ..common.report import print_json, print_table
from ..vllm import residency_shim
from . import bench_output

STUB_FLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror")
TIMINGS = ("unrelated_ns", "resident_ns")  # what the program's bench mode reports per call


def build_stub(root: Path, fixtures: Path, without_alloc_properties: bool = False) -> Path:
    """The stub loader in root/ and the program linked to it (its path is returned)."""
    root.mkdir(parents=True, exist_ok=True)
    lib = root / "libze_loader.so.1"
    defines = ["-DSTUB_NO_ALLOC_PROPERTIES"] if without_alloc_properties else []
    steps = [
        [
            "gcc",
            *STUB_FLAGS,
            "-fPIC",
            "-shared",
            *defines,
            "-Wl,-soname,libze_loader.so.1",
            "-o",
            str(lib),
            str(fixtures / "stub_ze_loader.c"),
        ],
        [
            "gcc",
            *STUB_FLAGS,
            "-o",
            str(root / "residency_calls"),
            str(fixtures / "residency_calls.c"),
            f"-L{root}",
            "-l:libze_loader.so.1",
            f"-Wl,-rpath,{root}",
            "-ldl",
        ],
    ]
    for argv in steps:
        subprocess.run(argv, check=True, capture_output=True, text=True)
    return root / "residency_calls"


def measure(program: Path, shim: Path | None, calls: int) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if shim is not None:
        env[residency_shim.AUDIT_VAR] = str(shim)
    out = subprocess.run(
        [str(program), "bench", str(calls)], env=env, capture_output=True, text=True, check=True, timeout=600
    )
    return json.loads(out.stdout)


def bench(fixtures: Path, calls: int, runs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="arcops-residency-bench-") as tmp:
        shim = residency_shim.build(Path(tmp) / "shim")
        program = build_stub(Path(tmp) / "stub", fixtures)
        samples: dict[str, list[dict]] = {"without": [], "with": []}
        for i in range(runs):  # interleaved: a busy moment of the machine hits both alike
            samples["without"].append(measure(program, None, calls))
            samples["with"].append(measure(program, shim, calls))
            print(f"[bench] run {i + 1}/{runs} done", file=sys.stderr, flush=True)
    median = {
        way: {key: round(statistics.median(s[key] for s in runs_), 2) for key in TIMINGS}
        for way, runs_ in samples.items()
    }
    return {
        "calls": calls,
        "runs": runs,
        "median_ns": median,
        "ratio": {key: round(median["with"][key] / median["without"][key], 3) for key in TIMINGS},
        "samples": samples,
    }


def _count(low: int, high: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low}..{high}, not {value}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench residency", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=_count(1000, 10**9), default=20_000_000, help="calls per timing")
    parser.add_argument("--runs", "-n", type=_count(1, 100), default=5, help="timings each way (default 5)")
    parser.add_argument("--fixtures", type=Path, default=Path("tests/fixtures/l0_residency"))
    bench_output.add_options(parser)
    args = parser.parse_args(argv)
    json_out = bench_output.json_target(args)  # refused before any run
    for name in ("stub_ze_loader.c", "residency_calls.c"):
        if not (args.fixtures / name).is_file():
            print(f"bench: --fixtures {args.fixtures}: no {name} there", file=sys.stderr)
            return 2
    try:
        result = bench(args.fixtures, args.calls, args.runs)
    except (residency_shim.BuildError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        detail = getattr(e, "stderr", "") or ""
        print(f"bench: {e}{': ' + detail.strip().splitlines()[0] if detail.strip() else ''}", file=sys.stderr)
        return 1
    bench_output.write(json_out, result)
    if args.format == "json":
        print_json(result)
        return 0
    m, r = result["median_ns"], result["ratio"]
    print_table(
        [
            {
                "call": "unrelated (bound straight to the loader)",
                "without_ns": m["without"]["unrelated_ns"],
                "with_ns": m["with"]["unrelated_ns"],
                "ratio": r["unrelated_ns"],
            },
            {
                "call": "own-device residency (asks who owns it)",
                "without_ns": m["without"]["resident_ns"],
                "with_ns": m["with"]["resident_ns"],
                "ratio": r["resident_ns"],
            },
        ],
        ["call", "without_ns", "with_ns", "ratio"],
    )
    print(f"median of {result['runs']} timings of {result['calls']} calls each way, interleaved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
