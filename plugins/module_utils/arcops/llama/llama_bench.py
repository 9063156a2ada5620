"""llama-bench, run and read: prompt processing (ppN) and generation (tgN) tokens/s, mean and
standard deviation over repetitions, with the build and model they came from.

llama-bench's `-o json` output is a list of objects, one per test, each with `n_prompt`,
`n_gen`, `avg_ts`, `stddev_ts` (tokens/s), `samples_ts` and what ran (`build_commit`,
`build_number`, `backends`, `model_filename`, `model_type`, `model_size`, `model_n_params`,
`n_gpu_layers`, `split_mode`, ...). The field report proved the Level Zero allocation fix with
pp512 and tg128: those are the default tests.

Stdlib only (the role runs it on the box).
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

from ..common.numbers import MAX_RATE, MAX_TOKENS, NumberError, number

DEFAULT_TESTS = ("pp512", "tg128")
TEST = re.compile(r"(pp|tg)([1-9][0-9]{0,6})")
MAX_OUTPUT = 64 * 2**20


class LlamaBenchError(ValueError):
    """Bad input, or llama-bench failed or printed something else than its JSON results."""


def parse_tests(text: str) -> tuple[list[int], list[int]]:
    """'pp512,tg128' -> ([512], [128]): llama-bench's -p and -n values."""
    prompts, gens = [], []
    for item in text.split(","):
        m = TEST.fullmatch(item.strip())
        if not m:
            raise LlamaBenchError(f"--tests {text!r}: {item.strip()!r} is not ppN or tgN (e.g. pp512,tg128)")
        (prompts if m[1] == "pp" else gens).append(int(m[2]))
    return prompts, gens


def argv(binary: str, model: str, tests: str, repetitions: int, extra: list[str]) -> list[str]:
    """llama-bench's command line for these tests (-p 0 / -n 0 when a kind is not asked)."""
    if not 1 <= repetitions <= 100:
        raise LlamaBenchError(f"--repetitions {repetitions}: must be 1 to 100")
    prompts, gens = parse_tests(tests)
    out = [binary, "-m", model, "-r", str(repetitions), "-o", "json"]
    out += ["-p", ",".join(map(str, prompts)) or "0", "-n", ",".join(map(str, gens)) or "0"]
    return out + list(extra)


def _number(row: dict, key: str, where: str, whole: bool = False) -> float:
    """A figure of a result: finite and not negative (tokens per second, token counts)."""
    try:
        return number(row.get(key), f"{where}: {key}", 0, MAX_TOKENS if whole else MAX_RATE, whole=whole)
    except NumberError as e:
        raise LlamaBenchError(str(e)) from None


def _test_name(n_prompt: int, n_gen: int, where: str) -> str:
    if n_prompt > 0 and n_gen > 0:
        return f"pp{n_prompt}+tg{n_gen}"
    if n_prompt > 0 or n_gen > 0:
        return f"pp{n_prompt}" if n_prompt > 0 else f"tg{n_gen}"
    raise LlamaBenchError(f"{where}: neither n_prompt nor n_gen is above 0")


def parse(text: str) -> list[dict]:
    """llama-bench's JSON results, each checked: [{test, n_prompt, n_gen, mean_ts, stddev_ts,
    samples_ts, ...what ran}]."""
    try:
        rows = json.loads(text)
    except ValueError as e:
        raise LlamaBenchError(f"llama-bench output: not JSON ({e})") from None
    if not isinstance(rows, list) or not rows:
        raise LlamaBenchError("llama-bench output: not a list of results")
    out = []
    for i, row in enumerate(rows):
        where = f"llama-bench result {i}"
        if not isinstance(row, dict):
            raise LlamaBenchError(f"{where}: not an object")
        n_prompt, n_gen = (int(_number(row, k, where, whole=True)) for k in ("n_prompt", "n_gen"))
        samples = row.get("samples_ts", [])
        if not isinstance(samples, list):
            raise LlamaBenchError(f"{where}: samples_ts must be a list of numbers")
        samples = [_number({"samples_ts": x}, "samples_ts", where) for x in samples]
        out.append(
            {
                "test": _test_name(n_prompt, n_gen, where),
                "n_prompt": n_prompt,
                "n_gen": n_gen,
                "mean_ts": _number(row, "avg_ts", where),
                "stddev_ts": _number(row, "stddev_ts", where),
                "repetitions": len(samples),
                "samples_ts": [float(s) for s in samples],
                **{k: row.get(k) for k in WHAT_RAN},
            }
        )
    return out


# What llama-bench says about the build, the model and the settings of each result.
WHAT_RAN = (
    "build_commit",
    "build_number",
    "backends",
    "model_filename",
    "model_type",
    "model_size",
    "model_n_params",
    "n_threads",
    "n_gpu_layers",
    "split_mode",
)


def run(binary: str, model: str, tests: str, repetitions: int, extra: list[str], timeout: float) -> dict:
    """Run llama-bench; the result arcops records: {format, argv, results}."""
    command = argv(binary, model, tests, repetitions, extra)
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise LlamaBenchError(f"--llama-bench {binary}: no such program") from None
    except PermissionError:
        raise LlamaBenchError(f"--llama-bench {binary}: not executable") from None
    except subprocess.TimeoutExpired:
        raise LlamaBenchError(f"llama-bench did not finish within {timeout:g} s") from None
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["(no output)"])[-1]
        raise LlamaBenchError(f"llama-bench exited with {done.returncode}: {last}")
    if len(done.stdout) > MAX_OUTPUT:
        raise LlamaBenchError("llama-bench output: larger than any result list")
    return {"format": 1, "argv": command, "results": parse(done.stdout.decode(errors="replace"))}


def table_rows(result: dict[str, Any]) -> list[dict]:
    return [
        {
            "test": r["test"],
            "tok/s": round(r["mean_ts"], 2),
            "stddev": round(r["stddev_ts"], 2),
            "runs": r["repetitions"],
            "backends": r.get("backends"),
            "ngl": r.get("n_gpu_layers"),
            "split": r.get("split_mode"),
        }
        for r in result["results"]
    ]
