"""Bad input by class: numbers read from files and tools. Every reader of numbers (probe verdicts,
llama-bench results, bench baselines, a server's maximum length and metrics, fleet status's bench
figure, sysfs facts) gets every hostile number in every numeric field it reads: huge, negative,
non-finite, non-numeric, and numbers JSON cannot hold. Each answers with its own one-line error,
or a result whose numbers are all finite and in range; never OverflowError, TypeError or a
traceback. The tally of how each case ended is docs/testing.md's, checked below."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest
from arcops.common import numbers, prometheus_text
from arcops.common.sysroot import parse_int, parse_number
from arcops.fleet import drain, fleet_status
from arcops.llama import allocprobe, llama_bench
from arcops.prove import bench, gate

# Values put into a JSON document, and texts put where a number's digits stand.
VALUES = [
    10**30,
    2**64,
    -1,
    -(10**30),
    float("inf"),
    float("-inf"),
    float("nan"),
    "12",
    "",
    True,
    None,
    [],
    {},
    1.5,
]
TEXTS = ["1e400", "-1e400", "9" * 5000, "1" + "0" * 400, "NaN", "+Inf", "-0", "0x10", "\uff11\uff12", "1_000"]
HOLE = "\u2063"  # where a text replaces a JSON value


def _with(doc: object, path: tuple, value: object) -> str:
    """DOC as JSON with the value at PATH replaced (a text: spliced in as written)."""
    doc = json.loads(json.dumps(doc))
    at = doc
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = HOLE if isinstance(value, str) and value in TEXTS else value
    return json.dumps(doc, allow_nan=True).replace(f'"{HOLE}"', str(value))


class _Server:
    """A server whose /props answers PROPS (gate.max_length's second source)."""

    def __init__(self, props: object) -> None:
        self.props = props

    def request_json(self, method: str, path: str) -> object:
        return self.props


PROBE = {
    "probe": "arcops-alloc-probe",
    "format": 1,
    "outcome": "measured",
    "exit_code": 0,
    "bytes": 1048576,
    "devices": [],
    "results": [
        {
            "method": "sycl",
            "ran": True,
            "ok": True,
            "mem_available_drop_bytes": 1,
            "drm_total_gtt_growth_bytes": 0,
        }
    ],
}
LLAMA_BENCH = [{"n_prompt": 512, "n_gen": 0, "avg_ts": 100.0, "stddev_ts": 1.0, "samples_ts": [99.0, 101.0]}]
BASELINE = {
    "format": 1,
    "decode": [{"max_concurrency": 1, "output_throughput": 70.0}],
    "prefill": [{"target_tokens": 1024, "prefill_throughput": 900.0}],
}
VERIFY = {"targets": {"vllm_service": {"bench": {"decode": {"1": 73.7}}}}}


def _metrics(value: object) -> dict:
    return drain.requests_in_flight(
        f'vllm:num_requests_running{{model="m"}} {value}\nvllm:num_requests_waiting 0\n'
    )


# Each reader: (its name, the document, the numeric fields, how to read a document, its errors).
READERS = [
    (
        "probe report",
        PROBE,
        [("exit_code",), ("bytes",), ("results", 0, "mem_available_drop_bytes")],
        allocprobe.parse,
        allocprobe.ProbeError,
    ),
    (
        "llama-bench results",
        LLAMA_BENCH,
        [(0, "n_prompt"), (0, "n_gen"), (0, "avg_ts"), (0, "stddev_ts"), (0, "samples_ts", 0)],
        llama_bench.parse,
        llama_bench.LlamaBenchError,
    ),
    (
        "bench baseline",
        BASELINE,
        [
            ("decode", 0, "max_concurrency"),
            ("decode", 0, "output_throughput"),
            ("prefill", 0, "target_tokens"),
            ("prefill", 0, "prefill_throughput"),
        ],
        lambda text: bench.load_baseline("b.json", lambda _name: text),
        bench.BenchError,
    ),
    (
        "served max_model_len",
        {"max_model_len": 4096},
        [("max_model_len",)],
        lambda text: gate.max_length(_Server({}), json.loads(text)),
        gate.GateError,
    ),
    (
        "llama-server /props",
        {"n_ctx": 4096},
        [("n_ctx",)],
        lambda text: gate.max_length(_Server(json.loads(text)), {}),
        gate.GateError,
    ),
    (
        "fleet status bench figure",
        VERIFY,
        [("targets", "vllm_service", "bench", "decode", "1")],
        lambda text: fleet_status.bench_figure(json.loads(text)),
        ValueError,
    ),
]


def _finite(found: object) -> bool:
    """Every number in FOUND is finite and fits 64 bits."""
    if isinstance(found, bool) or found is None or isinstance(found, str):
        return True
    if isinstance(found, (int, float)):
        return math.isfinite(found) and abs(found) <= 2**64
    if isinstance(found, dict):
        return all(_finite(v) for v in found.values())
    if isinstance(found, (list, tuple)):
        return all(_finite(v) for v in found)
    return True


def _one(read, error, text: str) -> str:
    """How one case ended: "refused" (its own one-line error) or "read" (finite result)."""
    try:
        found = read(text)
    except error as e:
        message = str(e)
        assert message and "\n" not in message and len(message) < 400, message
        assert not re.search(r"[0-9]{40}", message), "a huge number printed whole"
        return "refused"
    assert _finite(found), found
    return "read"


def _cases():
    for name, doc, fields, read, error in READERS:
        for path in fields:
            for value in VALUES + TEXTS:
                yield name, path, value, read, error, _with(doc, path, value)


CASES = list(_cases())


@pytest.mark.parametrize(("name", "path", "value", "read", "error", "text"), CASES, ids=lambda v: None)
def test_a_hostile_number_is_refused_or_read_finite(name, path, value, read, error, text):
    _one(read, error, text)


def test_metrics_counts_are_finite_or_refused():
    for value in ["+Inf", "-Inf", "NaN", "-1", "1e400", "9" * 5000, "x", "0x10"]:
        with pytest.raises(prometheus_text.MetricsError):
            _metrics(value)
    assert _metrics("3")["vllm:num_requests_running"] == 3.0


@pytest.mark.parametrize("text", [*TEXTS, "9" * 21, "-" + "9" * 21, "1.5", "", " 1", "1e3"])
def test_sysfs_numbers_are_numbers_of_a_sane_size_or_unknown(text):
    for parse in (parse_int, parse_number):
        found = parse(text)
        assert found is None or (math.isfinite(found) and abs(found) < 2**64)


@pytest.mark.parametrize("text", TEXTS)
def test_from_text_refuses_what_is_not_a_plain_number(text):
    try:
        found = numbers.from_text(text, "x", whole=True)
    except numbers.NumberError as e:
        assert "\n" not in str(e) and not re.search(r"[0-9]{40}", str(e))
    else:
        assert text == "-0" and found == 0


def tally() -> Counter:
    """How every case of READERS ended: {"refused": n, "read": m}."""
    return Counter(_one(read, error, text) for _n, _p, _v, read, error, text in CASES)


def test_docs_state_the_tally():
    ended = tally()
    text = (Path(__file__).parents[1] / "docs" / "testing.md").read_text()
    stated = f"numbers: {sum(ended.values())} cases, {ended['refused']} refused, {ended['read']} read"
    assert stated in text, f"docs/testing.md should say: {stated}"
