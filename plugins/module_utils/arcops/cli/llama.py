"""arcops llama source, alloc-probe-verdict, llama-bench, llama-same-output, health-watch: llama.cpp's
Level Zero allocations and their proof, its speed, the same answers on one GPU and on all of them,
and its serving health (cli/health.py)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from ..common.inputs import read_bytes, read_text
from ..common.outputs import output_file, write_atomic
from ..common.report import print_json, print_table
from ..llama import allocprobe, llama_bench, llama_source, same_output
from ..prove import prompts
from . import health
from .common import error, number, positive_int, seconds


def _cmd_llama_source(args: argparse.Namespace) -> int:
    try:
        leftovers = not args.upstream_untouched
        helper = llama_source.shipped_helper()
        result = llama_source.apply(args.source, helper, check=args.check, leftovers=leftovers).as_dict()
    except (llama_source.SourceMismatch, OSError) as e:
        error(f"arcops: {e}")
        return 2
    if args.json:
        print_json(result)
        return 0
    verb = "would route" if args.check else "routed"
    if result["path"] == "upstream":
        print(f"upstream Level Zero allocation path ({', '.join(result['evidence'])})")
        if result["changed"]:
            print(f"leftovers: {verb} {_counted(result['counts'])} through {llama_source.HELPER}")
        elif result["routed"]:
            print(f"leftovers already routed ({len(result['routed'])} call(s))")
        else:
            print("source left as is")
    elif result["changed"]:
        print(f"arcops change: {verb} {_counted(result['counts'])} through {llama_source.HELPER}")
    else:
        print("arcops change already applied")
    for site in result["sites"]:
        print(f"  {site['file']}:{site['line']}: {_KIND_TEXT[site['kind']]}: {site['before']}")
    for where in result["unrouted"]:
        print(f"  still sycl::malloc_device: {where}")
    print("cmake: " + " ".join(result["cmake_args"]))
    return 0


# How a site is named in the report: frees by what they release.
_KIND_TEXT = {
    "alloc": "device allocation",
    "free": "device free",
    "free_host": "host free",
    "free_shared": "shared free",
    "free_unknown": "untraced free",
}


def _counted(counts: dict[str, int]) -> str:
    """'3 device allocation(s), 3 device free(s), 2 host free(s)': the kinds present, in order."""
    return ", ".join(f"{n} {_KIND_TEXT[kind]}(s)" for kind, n in counts.items() if n)


def _cmd_alloc_probe_verdict(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.buffer.read() if args.report == "-" else read_bytes(args.report, "probe report")
        found = allocprobe.verdict(allocprobe.parse(text), args.max_host_ram_fraction)
    except (allocprobe.ProbeError, OSError, ValueError) as e:
        error(f"arcops: {e}")
        return 2
    if args.json:
        print_json(found.as_dict())
    else:
        print("\n".join(found.summary()))
        print("verdict: " + ("ok" if found.ok else "FAILED"))
    return 0 if found.ok else 1


def _extra(args: argparse.Namespace) -> list[str]:
    """What follows -- on the command line: passed to the llama.cpp program as it is."""
    return args.extra[1:] if args.extra[:1] == ["--"] else args.extra


def _cmd_llama_bench(args: argparse.Namespace) -> int:
    try:
        if args.output:
            output_file(args.output, "result file")
        if not Path(args.model).is_file():
            raise ValueError(f"--model {args.model}: not a file")
        if sys.stderr.isatty() or args.progress:
            print(
                f"[llama-bench] {args.tests}, {args.repetitions} repetition(s) each",
                file=sys.stderr,
                flush=True,
            )
        result = llama_bench.run(
            args.llama_bench, args.model, args.tests, args.repetitions, _extra(args), args.timeout
        )
    except ValueError as e:
        error(f"arcops llama bench: {e}")
        return 2
    if args.output:
        write_atomic(args.output, json.dumps(result, indent=2, sort_keys=True) + "\n")
    if args.json:
        print_json(result)
    else:
        print_table(
            llama_bench.table_rows(result), ["test", "tok/s", "stddev", "runs", "backends", "ngl", "split"]
        )
    return 0


def _cmd_same_output(args: argparse.Namespace) -> int:
    try:
        if args.output:
            output_file(args.output, "result file")
        data = (
            prompts.load(read_text(args.prompts, "prompt set"), args.prompts)
            if args.prompts
            else prompts.DEFAULT
        )
        with tempfile.TemporaryDirectory(prefix="arcops-same-output-") as tmp:
            logs = Path(args.log_dir) if args.log_dir else Path(tmp)
            result = same_output.run(args.llama_server, args.model, data, logs, _extra(args), args.timeout)
    except (same_output.SameOutputError, prompts.PromptSetError, ValueError) as e:
        error(f"arcops llama same-output: {e}")
        return 2
    if args.output:
        write_atomic(args.output, json.dumps(result, indent=2, sort_keys=True) + "\n")
    if args.json:
        print_json(result)
        return 0 if result["same"] else 1
    rows = [
        {
            "setup": name,
            "split": " ".join(same_output.SETUPS[name]),
            "load s": r["load"]["load_seconds"],
            "host RAM peak GiB": r["load"]["host_ram_used_peak_gib"],
            "server RSS GiB": r["load"]["server_rss_peak_gib"],
            "GTT GiB": r["load"]["server_gtt_peak_gib"],
        }
        for name, r in result["setups"].items()
    ]
    print_table(rows, list(rows[0]))
    print(f"model {result['model_gib']} GiB")
    for line in result["errors"]:
        print(f"error: {line}")
    if result["same"]:
        count = len(same_output.texts(result["setups"]["one"]["gate"]))
        print(f"{count} answers byte-identical on one GPU and on all; SAME")
    else:
        print(f"answers differ: {', '.join(result['differ']) or '-'}; DIFFERENT")
    return 0 if result["same"] else 1


def add(sub) -> None:
    p = sub.add_parser(
        "source",
        help="llama.cpp source: detect its Level Zero allocation path, or route allocations through arcops'",
    )
    p.add_argument("source", help="llama.cpp source tree (changed in place unless --check)")
    p.add_argument("--check", action="store_true", help="report what would change; write nothing")
    p.add_argument(
        "--upstream-untouched",
        action="store_true",
        help="on a source with upstream's Level Zero path, change nothing: list the device allocations "
        "it leaves on sycl::malloc_device instead of routing them",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_llama_source)

    p = sub.add_parser(
        "probe-verdict", help="judge arcops-alloc-probe JSON (exit 0 ok, 1 failed, 2 bad input)"
    )
    p.add_argument("report", help="the probe's JSON output, or - for standard input")
    p.add_argument(
        "--max-host-ram-fraction",
        type=number,
        default=allocprobe.DEFAULT_MAX_FRACTION,
        help="host RAM a Level Zero allocation may cost, as a fraction of its size (default 0.01)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_alloc_probe_verdict)

    p = sub.add_parser(
        "bench",
        help="run llama-bench (pp512, tg128 or given tests) and record mean and stddev tokens/s",
    )
    p.add_argument("--llama-bench", required=True, help="the llama-bench program of the build to measure")
    p.add_argument("--model", required=True, help="the .gguf model")
    p.add_argument(
        "--tests", default=",".join(llama_bench.DEFAULT_TESTS), help="ppN and tgN, comma-separated"
    )
    p.add_argument("--repetitions", type=positive_int, default=5, help="runs per test (default 5)")
    p.add_argument("--timeout", type=seconds, default=3600.0, help="seconds for the whole run (default 3600)")
    p.add_argument(
        "--progress", action="store_true", help="a progress line on stderr even when not a terminal"
    )
    p.add_argument("--output", help="write the result JSON here (atomically)")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "extra", nargs=argparse.REMAINDER, help="after --: more llama-bench options (-ngl 99 -sm layer)"
    )
    p.set_defaults(func=_cmd_llama_bench)

    p = sub.add_parser(
        "same-output",
        help="llama-server with the model on one GPU and split over all: the same greedy answers byte for "
        "byte, and the host RAM each load cost (exit 0 same, 1 different, 2 bad input)",
    )
    p.add_argument("--llama-server", required=True, help="the llama-server program of the build to check")
    p.add_argument("--model", required=True, help="the .gguf model")
    p.add_argument("--prompts", help="a prompt set (JSON, docs/prove.md); default: the gate's shipped set")
    p.add_argument("--timeout", type=seconds, default=600.0, help="seconds for a load and per request")
    p.add_argument("--log-dir", help="keep each server's log here (default: a temporary folder)")
    p.add_argument("--output", help="write the result JSON here (atomically)")
    p.add_argument("--json", action="store_true")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="after --: more llama-server options for both")
    p.set_defaults(func=_cmd_same_output)

    health.add_llama(sub)
