"""arcops prove gate and bench: does an OpenAI-compatible server (vLLM, llama-server) answer right,
how fast."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..common.inputs import read_text
from ..common.outputs import output_file, write_atomic
from ..common.report import print_json, print_table
from ..prove import bench, gate, prompts
from ..prove.openai_api import ApiError, Endpoint, read_key_file
from .common import error, finite, number, positive_int, whole

KEY_ENV = "ARCOPS_API_KEY"
WATCH_HELP = (
    "on the serving box: sample MemAvailable and swap and follow the kernel journal during the run; "
    "an xe event fails it"
)


def api_key(args: argparse.Namespace) -> str | None:
    """From --api-key-file or $ARCOPS_API_KEY; never from the command line (ps shows argv)."""
    if args.api_key_file:
        return read_key_file(args.api_key_file)
    return os.environ.get(KEY_ENV) or None


def _watch(args: argparse.Namespace):
    if not args.watch_host:
        return None
    from ..prove.host_watch import HostWatch

    return HostWatch()


def _host_line(host: dict | None) -> str | None:
    if not host:
        return None
    xe = host["xe_events"]
    text = (
        f"host: MemAvailable min {host['mem_available_min_gib']} GiB, "
        f"swap used max {host['swap_used_max_gib']} GiB, {len(xe)} xe event(s) during the run"
    )
    if host["journal_error"]:
        text += f" (kernel journal unreadable: {host['journal_error']})"
    return text + ("; an xe event fails the run" if xe else "")


def _cmd_gate(args: argparse.Namespace) -> int:
    try:
        data = (
            prompts.load(read_text(args.prompts, "prompt set"), args.prompts)
            if args.prompts
            else prompts.DEFAULT
        )
        golden = gate.load_golden(read_text(args.golden, "golden file"), args.golden) if args.golden else None
        if args.write_golden:
            output_file(args.write_golden, "golden file")
        endpoint = Endpoint(args.url, api_key(args), timeout=args.timeout)
        report = gate.run(
            endpoint, args.model, data, golden, args.fail_on_drift, args.stack, watch=_watch(args)
        )
    except (gate.GateError, prompts.PromptSetError, ApiError, ValueError) as e:
        error(f"arcops prove gate: {e}")
        return 2
    if args.write_golden:
        write_atomic(args.write_golden, json.dumps(gate.golden_from(report), indent=2, sort_keys=True) + "\n")
    if args.json:
        print_json(report)
    else:
        print_table(gate.table_rows(report), ["prompt", "expected", "one at a time", "all at once", "s"])
        right = sum(r["pass"] for r in report["prompts"])
        line = f"{right} of {len(report['prompts'])} right in both runs"
        if report["drift"] is not None:
            line += f"; drift from the golden: {', '.join(report['drift']) or 'none'}"
        print(line + ("; PASS" if report["passed"] else "; FAIL"))
        if report["host"]:
            print(_host_line(report["host"]))
    return 0 if report["passed"] else 1


def _server_options(p: argparse.ArgumentParser, timeout: float) -> None:
    """What gate and bench both take: the server, its key, the stack, the timeout, the host watch."""
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8000")
    p.add_argument("--model", required=True, help="the served model name")
    p.add_argument(
        "--api-key-file", help=f"a file holding the API key (else ${KEY_ENV}; never on the command line)"
    )
    p.add_argument(
        "--stack",
        help="what serves (image digest or build, GPU count), kept with the result; gate goldens match on it",
    )
    p.add_argument(
        "--timeout", type=finite, default=timeout, help=f"seconds per request (default {timeout:g})"
    )
    p.add_argument("--watch-host", action="store_true", help=WATCH_HELP)
    p.add_argument("--json", action="store_true")


def add(sub) -> None:
    p = sub.add_parser(
        "gate",
        help="ask an OpenAI-compatible server a prompt set one at a time and all at once; "
        "exit 0 when every answer is right in both runs, 1 when not, 2 on bad input",
    )
    _server_options(p, timeout=300.0)
    p.add_argument("--prompts", help="a prompt set (JSON, see docs/prove.md); default: the shipped set")
    p.add_argument("--golden", help="compare the answers with this golden file (a difference is drift)")
    p.add_argument("--write-golden", metavar="FILE", help="record this run's answers as a golden file")
    p.add_argument("--fail-on-drift", action="store_true", help="drift from the golden fails the gate")
    p.set_defaults(func=_cmd_gate)
    add_bench(sub)


def _int_list(text: str) -> list[int]:
    try:
        values = [whole(v) for v in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: every number must be 1 or more")
    return values


def _cmd_bench(args: argparse.Namespace) -> int:
    def progress(text: str) -> None:
        if sys.stderr.isatty() or args.progress:
            print(f"[bench] {text}", file=sys.stderr, flush=True)

    try:
        if args.output:
            output_file(args.output, "result file")
        if args.plot:
            output_file(args.plot, "plot file")
        baseline = None
        if args.baseline:
            baseline = bench.load_baseline(args.baseline, lambda path: read_text(path, "baseline"))
        if not 0 <= args.tolerance < 1:
            raise ValueError(f"--tolerance {args.tolerance}: a fraction from 0 to below 1 (0.1 = 10 %)")
        endpoint = Endpoint(args.url, api_key(args), timeout=args.timeout)
        result = bench.run(
            endpoint,
            args.model,
            args.concurrency,
            args.prompt_lengths,
            args.output_tokens,
            args.requests,
            args.stack,
            progress,
            watch=_watch(args),
            baseline=baseline,
            tolerance=args.tolerance,
            warmup_per_stream=args.warmup,
        )
    except (bench.BenchError, ApiError, ValueError) as e:
        error(f"arcops prove bench: {e}")
        return 2
    worse = bench.failures(result)
    if args.output:
        write_atomic(args.output, json.dumps(result, indent=2, sort_keys=True) + "\n")
    if args.plot:
        from ..prove.plots import PlotError, bench_png

        try:
            bench_png(result, args.plot, baseline)
        except PlotError as e:
            error(f"arcops prove bench: {e}")
            return 2
    if args.json:
        print_json(result)
        return 1 if worse else 0
    rows = [
        {
            "streams": d["max_concurrency"],
            "done": f"{d['completed']}/{d['completed'] + d['failed']}",
            "out tok/s": _round(d["output_throughput"]),
            "TTFT p50 ms": _round(d["median_ttft_ms"]),
            "TPOT p50 ms": _round(d["median_tpot_ms"]),
            "ITL p99 ms": _round(d["p99_itl_ms"]),
            "E2E p50 ms": _round(d["median_e2el_ms"]),
        }
        for d in result["decode"]
    ]
    print_table(rows, list(rows[0]) if rows else ["streams"])
    for d in result["decode"]:
        if d.get("tpot_unknown_why"):  # TPOT and ITL blank above: say why, never show 0
            print(f"streams {d['max_concurrency']}: TPOT unknown: {d['tpot_unknown_why']}")
    counted = [d for d in result["decode"] if d.get("server")]
    if counted:
        print("\nthe server's own counters over each level (bench / server):")
        rows = [
            {"streams": d["max_concurrency"], **{k: _pair(d["server"].get(k)) for k in SERVER_FIGURES}}
            for d in counted
        ]
        print_table(rows, ["streams", *SERVER_FIGURES])
    prefill = [
        {
            "prompt tokens": p.get("input_tokens", p["target_tokens"]),
            "TTFT ms": _round(p.get("ttft_ms")),
            "prefill tok/s": _round(p.get("prefill_throughput")),
            "error": p.get("error"),
        }
        for p in result["prefill"]
    ]
    if prefill:
        print()
        print_table(prefill, ["prompt tokens", "TTFT ms", "prefill tok/s", "error"])
    if result["prefill_left_out"]:
        print(f"left out (above the served {result['max_model_len']} tokens): {result['prefill_left_out']}")
    if result["host"]:
        print(_host_line(result["host"]))
    if "comparison" in result:
        print(f"\nagainst {result['baseline']['what']} (tolerance {args.tolerance:.0%}):")
        rows = [
            {
                "figure": c["what"],
                "now": _round(c["value"]),
                "baseline": c["baseline"],
                "ratio": f"{c['ratio']:.2f}",
                "": "WORSE" if c["worse"] else "",
            }
            for c in result["comparison"]
        ]
        print_table(rows, ["figure", "now", "baseline", "ratio", ""])
    return 1 if worse else 0


SERVER_FIGURES = ("output_tokens", "requests", "mean_ttft_ms")


def _pair(figure: dict | None) -> str:
    if not figure:
        return "-"
    bench = "-" if figure["bench"] is None else f"{figure['bench']:g}"
    return f"{bench} / {round(figure['server'], 1):g}"


def _warmup(text: str) -> int:
    try:
        n = whole(text)
    except argparse.ArgumentTypeError:
        n = -1
    if not 0 <= n <= 100:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number from 0 to 100")
    return n


def _round(value):
    return None if value is None else round(value, 1)


def add_bench(sub) -> None:
    p = sub.add_parser(
        "bench",
        help="decode throughput at N concurrent streams and prefill/TTFT at given prompt lengths "
        "against an OpenAI-compatible server (vllm bench serve's metrics and field names)",
    )
    _server_options(p, timeout=600.0)
    p.add_argument(
        "--concurrency",
        type=_int_list,
        default=list(bench.DEFAULT_CONCURRENCY),
        help="streams at once (default " + ",".join(map(str, bench.DEFAULT_CONCURRENCY)) + ")",
    )
    p.add_argument(
        "--prompt-lengths",
        type=_int_list,
        help="prefill prompt lengths in tokens (default "
        + ",".join(map(str, bench.DEFAULT_LENGTHS))
        + ", capped at the served maximum)",
    )
    p.add_argument(
        "--output-tokens", type=positive_int, default=128, help="tokens per decode request (default 128)"
    )
    p.add_argument(
        "--requests",
        type=positive_int,
        help="requests per decode level (default twice the streams, at least 4)",
    )
    p.add_argument(
        "--warmup",
        type=_warmup,
        default=1,
        metavar="N",
        help="warm-up requests per stream before each decode level, not counted (default 1; 0: none)",
    )
    p.add_argument(
        "--baseline",
        help="a previous result file, or a profile of the field report's figures "
        "(b60x2-graph_mtp, b60x2-compiled, b60x2-eager): exit 1 when worse beyond --tolerance",
    )
    p.add_argument(
        "--tolerance",
        type=number,
        default=bench.TOLERANCE,
        help=f"how much worse is allowed (default {bench.TOLERANCE:g} = {bench.TOLERANCE * 100:g} %%)",
    )
    p.add_argument("--output", help="write the result JSON here (atomically)")
    p.add_argument("--plot", help="a PNG of the result (beside its baseline): needs the plots extra")
    p.add_argument(
        "--progress", action="store_true", help="progress lines on stderr even when not a terminal"
    )
    p.set_defaults(func=_cmd_bench)
