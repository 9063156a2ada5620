"""arcops llama-source, alloc-probe-verdict: llama.cpp's Level Zero allocations and their proof."""

from __future__ import annotations

import argparse
import sys

from ..common.inputs import read_bytes
from ..common.report import print_json
from ..llama import allocprobe, llama_source


def _cmd_llama_source(args: argparse.Namespace) -> int:
    try:
        result = llama_source.apply(args.source, llama_source.shipped_helper(), check=args.check).as_dict()
    except (llama_source.SourceMismatch, OSError) as e:
        print(f"arcops: {e}", file=sys.stderr)
        return 2
    if args.json:
        print_json(result)
        return 0
    if result["path"] == "upstream":
        print(f"upstream Level Zero allocation path ({', '.join(result['evidence'])}); source left as is")
        for where in result["unrouted"]:
            print(f"  still sycl::malloc_device: {where}")
    elif result["changed"]:
        verb = "would route" if args.check else "routed"
        print(f"arcops change: {verb} {len(result['sites'])} call(s) through {llama_source.HELPER}")
        for site in result["sites"]:
            print(f"  {site['file']}:{site['line']}: {site['before']}")
    else:
        print("arcops change already applied")
    print("cmake: " + " ".join(result["cmake_args"]))
    return 0


def _cmd_alloc_probe_verdict(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.buffer.read() if args.report == "-" else read_bytes(args.report, "probe report")
        found = allocprobe.verdict(allocprobe.parse(text), args.max_host_ram_fraction)
    except (allocprobe.ProbeError, OSError, ValueError) as e:
        print(f"arcops: {e}", file=sys.stderr)
        return 2
    if args.json:
        print_json(found.as_dict())
    else:
        print("\n".join(found.summary()))
        print("verdict: " + ("ok" if found.ok else "FAILED"))
    return 0 if found.ok else 1


def add(sub) -> None:
    p = sub.add_parser(
        "llama-source",
        help="llama.cpp source: detect its Level Zero allocation path, or route allocations through arcops'",
    )
    p.add_argument("source", help="llama.cpp source tree (changed in place unless --check)")
    p.add_argument("--check", action="store_true", help="report what would change; write nothing")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_llama_source)

    p = sub.add_parser(
        "alloc-probe-verdict", help="judge arcops-alloc-probe JSON (exit 0 ok, 1 failed, 2 bad input)"
    )
    p.add_argument("report", help="the probe's JSON output, or - for standard input")
    p.add_argument(
        "--max-host-ram-fraction",
        type=float,
        default=allocprobe.DEFAULT_MAX_FRACTION,
        help="host RAM a Level Zero allocation may cost, as a fraction of its size (default 0.01)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_alloc_probe_verdict)
