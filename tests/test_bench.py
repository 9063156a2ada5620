"""The benchmark core: vllm bench serve's statistics (numpy's percentile), and streamed requests
timed against the real vLLM (CPU build) of the gate tests."""

import pytest
from arcops.prove import bench
from arcops.prove.openai_api import Endpoint

from .helpers.vllm_cpu import API_KEY, MODEL_NAME


@pytest.mark.parametrize(
    ("values", "p", "want"),
    [
        ([1.0], 99, 1.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),  # numpy.percentile([1, 2, 3, 4], 50)
        ([1.0, 2.0, 3.0, 4.0], 90, 3.7),  # numpy.percentile([1, 2, 3, 4], 90)
        ([10.0, 1.0, 5.0], 99, 9.9),  # numpy.percentile([10, 1, 5], 99)
    ],
)
def test_percentiles_are_numpys(values, p, want):
    assert bench.percentile(values, p) == pytest.approx(want)


def test_a_summary_uses_vllm_bench_serve_names_and_counts_usage_tokens():
    results = [
        {"ttft": 0.1, "e2el": 1.1, "itl": [0.1] * 10, "tpot": 0.1, "input_tokens": 100, "output_tokens": 11},
        {"ttft": 0.3, "e2el": 1.3, "itl": [0.1] * 10, "tpot": 0.1, "input_tokens": 100, "output_tokens": 11},
        {"error": "POST /v1/chat/completions: 500 boom"},
    ]
    s = bench.summarize(results, duration=2.0, concurrency=2)
    assert (s["completed"], s["failed"], s["errors"]) == (2, 1, ["POST /v1/chat/completions: 500 boom"])
    assert (s["total_input_tokens"], s["total_output_tokens"]) == (200, 22)
    assert (
        s["request_throughput"] == 1.0
        and s["output_throughput"] == 11.0
        and s["total_token_throughput"] == 111.0
    )
    assert s["mean_ttft_ms"] == pytest.approx(200) and s["median_ttft_ms"] == pytest.approx(200)
    assert s["p99_itl_ms"] == pytest.approx(100) and s["mean_e2el_ms"] == pytest.approx(1200)
    empty = bench.summarize([], duration=1.0, concurrency=1)
    assert empty["completed"] == 0 and empty["mean_ttft_ms"] is None


class Burst:
    """An OpenAI endpoint whose answers come as TEXTS (one chunk each), then the usage."""

    def __init__(self, texts: list[str], tokens: int):
        self.texts, self.tokens = texts, tokens

    def stream_chat(self, body):
        for text in self.texts:
            yield {"choices": [{"delta": {"content": text}}]}
        yield {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": self.tokens}}


def test_an_answer_that_comes_in_one_burst_is_said_and_has_no_tpot(capsys):
    ticks = iter(range(100))
    clock = lambda: float(next(ticks))  # noqa: E731 (one tick per look)
    burst = bench.stream_one(Burst(["one two three four five six seven eight"], 8), {}, clock)
    assert burst["burst"] is True and burst["chunks"] == 1
    assert burst["tpot"] is None and burst["itl"] == []  # never 0: unknown
    streamed = bench.stream_one(Burst([f"w{n} " for n in range(8)], 8), {}, clock)
    assert streamed["burst"] is False and len(streamed["itl"]) == 7 and streamed["tpot"] > 0
    s = bench.summarize([burst, streamed], duration=10.0, concurrency=2)
    assert s["burst_requests"] == 1 and s["tpot_unknown_why"].startswith(
        "1 of 2 answers came in a few chunks"
    )
    only = bench.summarize([burst], duration=10.0, concurrency=1)
    assert only["median_tpot_ms"] is None and only["p99_itl_ms"] is None
    # Four chunks for eight tokens is still a stream (a server that sends two tokens a chunk).
    assert not bench.is_burst(4, 8) and bench.is_burst(3, 8) and not bench.is_burst(1, 3)


def test_streams_are_timed_against_the_real_server(vllm_server):
    endpoint = Endpoint(vllm_server.url, API_KEY)
    body = {
        "model": MODEL_NAME,
        "messages": [{"role": "user", "content": "Count to ten."}],
        "max_tokens": 32,
        "temperature": 0,
        "ignore_eos": True,  # vLLM: always generate max_tokens, as vllm bench serve does
    }
    one = bench.stream_one(endpoint, body)
    assert "error" not in one, one
    assert one["output_tokens"] == 32 and 0 < one["ttft"] < one["e2el"]
    assert one["input_tokens"] > 0 and 1 <= one["chunks"] <= 32
    # On a machine whose cores are all busy, vLLM's CPU build may hand the answer over in a burst
    # at its end: then it is said, and no ITL or TPOT is made up from the burst's few gaps.
    if one["burst"]:
        assert one["itl"] == [] and one["tpot"] is None
    else:
        assert len(one["itl"]) == one["chunks"] - 1 and one["tpot"] > 0
    results, duration = bench.run_level(endpoint, [body] * 4, concurrency=4)
    s = bench.summarize(results, duration, 4)
    assert (s["completed"], s["total_output_tokens"]) == (4, 128)
    assert s["output_throughput"] > 0 and s["p99_ttft_ms"] >= s["median_ttft_ms"] > 0
    bad = bench.stream_one(Endpoint(vllm_server.url, "wrong-key"), body)
    assert bad["error"].startswith("POST /v1/chat/completions: 401")


def test_the_bench_command_against_the_real_server(vllm_server, tmp_path, capsys, monkeypatch):
    from arcops import cli

    monkeypatch.setenv("ARCOPS_API_KEY", API_KEY)
    base = ["prove", "bench", "--url", vllm_server.url, "--model", MODEL_NAME, "--output-tokens", "16"]
    out_file = tmp_path / "result.json"
    code = cli.main(
        [
            *base,
            "--concurrency",
            "1,2",
            "--requests",
            "2",
            "--prompt-lengths",
            "256,1024",
            "--output",
            str(out_file),
            "--stack",
            "cpu-tiny",
            "--progress",
            "--plot",
            str(tmp_path / "result.png"),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    import json

    result = json.loads(out_file.read_text())
    assert [d["max_concurrency"] for d in result["decode"]] == [1, 2]
    assert all(d["completed"] == 2 and d["total_output_tokens"] == 32 for d in result["decode"])
    assert [p["target_tokens"] for p in result["prefill"]] == [256, 1024]
    assert all(0.8 * p["target_tokens"] <= p["input_tokens"] <= p["target_tokens"] for p in result["prefill"])
    assert result["warmup"]["output_tokens"] == 16 and result["stack"] == "cpu-tiny"
    assert "out tok/s" in out and "[bench] decode: 2 requests, 2 at a time" in err
    # One warm-up request per stream before each level, not counted in it.
    assert [d["warmup_requests"] for d in result["decode"]] == [1, 2]
    assert "[bench] decode: 2 warm-up request(s), 2 at a time (not counted)" in err
    # vLLM's own counters over each level agree with what the bench measured on the client.
    for d in result["decode"]:
        server = d["server"]
        assert server["output_tokens"] == {"server": 32.0, "bench": 32, "difference": 0.0}
        assert server["requests"] == {"server": 2.0, "bench": 2, "difference": 0.0}
        ttft = server["mean_ttft_ms"]  # the server's from its own clock, the bench's from the client
        assert ttft["server"] > 0 and ttft["bench"] >= ttft["server"] * 0.5
    assert "the server's own counters over each level (bench / server):" in out and "32 / 32" in out
    assert (tmp_path / "result.png").read_bytes()[:4] == b"\x89PNG"
    # Defaults are capped at the served 2048 tokens (8K and up left out, one at the cap run).
    code = cli.main([*base, "--concurrency", "1", "--requests", "1", "--warmup", "0", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["prefill_left_out"] == [8192, 32768, 65536]
    assert result["decode"][0]["warmup_requests"] == 0
    assert [p["target_tokens"] for p in result["prefill"]] == [2048 - 16 - 16]
    # Against a baseline: a result file far slower passes; a far faster one makes the run worse (exit
    # 1). Not itself: one 16-token request on a loaded 2-core machine can take ten times as long.
    result["decode"][0]["output_throughput"] /= 1000
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(result))
    fast = tmp_path / "fast.json"
    fast.write_text(json.dumps({"format": 1, "decode": [{"max_concurrency": 1, "output_throughput": 1e9}]}))
    run_one = [*base, "--concurrency", "1", "--requests", "1", "--prompt-lengths", "128", "--json"]
    assert cli.main([*run_one, "--baseline", str(slow)]) == 0
    slower = json.loads(capsys.readouterr().out)["comparison"]
    assert [(c["what"], c["worse"]) for c in slower] == [("decode 1", False)]
    assert cli.main([*run_one, "--baseline", str(fast)]) == 1
    worse = json.loads(capsys.readouterr().out)["comparison"]
    assert [(c["what"], c["worse"]) for c in worse] == [("decode 1", True)]
    # A length the user asks for above the served maximum is refused before any request.
    code = cli.main([*base, "--prompt-lengths", "4096"])
    err = capsys.readouterr().err
    assert code == 2 and "--prompt-lengths 4096: above what the server serves (2048 tokens" in err


def test_baselines_are_profiles_or_results_and_worse_is_beyond_the_tolerance(tmp_path):
    name, figures = bench.load_baseline("b60x2-graph_mtp", lambda p: "")
    assert name == "profile b60x2-graph_mtp" and figures["decode"] == {1: 73.7, 4: 230.0, 8: 361.0}
    result = {
        "decode": [
            {"max_concurrency": 1, "output_throughput": 70.0},
            {"max_concurrency": 4, "output_throughput": 200.0},
        ],
        "prefill": [{"target_tokens": 8192, "prefill_throughput": 1600.0}],
    }
    rows = {c["what"]: c for c in bench.compare(result, figures, 0.1)}
    assert rows["decode 1"]["worse"] is False  # 0.95 of 73.7
    assert rows["decode 4"]["worse"] is True  # 0.87 of 230
    assert rows["prefill 8192"]["worse"] is False and "decode 8" not in rows
    with pytest.raises(bench.BenchError, match=r"--baseline x\.json: not JSON"):
        bench.load_baseline("x.json", lambda p: "{")
    with pytest.raises(bench.BenchError, match=r"neither a bench result nor a profile \(b60x2-graph_mtp"):
        bench.load_baseline("x.json", lambda p: "[1]")


def test_a_plot_is_a_png_of_this_run_beside_its_baseline(tmp_path):
    from arcops.prove import plots

    result = {
        "model": "tiny",
        "url": "http://127.0.0.1:8000",
        "stack": "cpu",
        "decode": [
            {
                "max_concurrency": c,
                "output_throughput": 50.0 * c,
                "median_ttft_ms": 40.0 * c,
                "p99_ttft_ms": 60.0 * c,
                "median_tpot_ms": 20.0 + c,
                "p99_tpot_ms": 30.0 + c,
            }
            for c in (1, 4, 8)
        ],
        "prefill": [{"target_tokens": n, "prefill_throughput": 1400.0} for n in (8192, 32768)],
    }
    baseline = ("profile b60x2-graph_mtp", bench.PROFILES["b60x2-graph_mtp"])
    fig = plots.bench_figure(result, baseline)
    decode, latency, prefill = fig.axes
    assert fig._suptitle.get_text() == "tiny on http://127.0.0.1:8000 (cpu)"  # the model and the server
    for ax in (decode, latency):
        assert list(ax.get_xticks()) == [1, 4, 8]  # whole stream counts, no 2.5 streams
    assert all(ax.get_ylim()[0] == 0 for ax in fig.axes)  # every y axis from zero
    assert [ax.get_ylabel() for ax in fig.axes] == ["output tokens/s", "milliseconds", "prefill tokens/s"]
    assert [line.get_label() for line in latency.get_lines()] == [
        "TTFT median",
        "TTFT p99",
        "TPOT median",
        "TPOT p99",
    ]
    assert [line.get_label() for line in decode.get_lines()] == ["this run", "profile b60x2-graph_mtp"]
    assert list(prefill.get_lines()[0].get_xdata()) == [8192, 32768]
    assert list(prefill.get_xticks()) == [8192, 32768]
    out = plots.bench_png(result, tmp_path / "bench.png", baseline)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1600, 420)
    assert [p.name for p in tmp_path.iterdir()] == ["bench.png"]  # written beside, renamed, no leftovers


class Scraped:
    """An endpoint whose /metrics answers TEXTS in turn (an ApiError for None)."""

    def __init__(self, *texts):
        self.texts = list(texts)

    def text(self, path):
        from arcops.prove.openai_api import ApiError

        answer = self.texts.pop(0)
        if answer is None:
            raise ApiError("GET /metrics: 404 Not Found", 404)
        return answer


def test_the_server_counters_beside_the_bench_and_servers_without_them():
    from arcops.prove import server_counters

    measured = {"total_output_tokens": 64, "completed": 4, "mean_ttft_ms": 30.0}
    # llama-server --metrics counts predicted tokens only; a neighbour's request shows as a difference.
    endpoint = Scraped("llamacpp:tokens_predicted_total 100\n", "llamacpp:tokens_predicted_total 180\n")
    before, after = server_counters.read(endpoint), server_counters.read(endpoint)
    assert server_counters.level(before, after, measured) == {
        "output_tokens": {"server": 80.0, "bench": 64, "difference": -16.0}
    }
    # No /metrics (a server without it, or a proxy): nothing is claimed.
    assert (
        server_counters.read(Scraped(None)) is None and server_counters.read(Scraped("# nothing\n")) is None
    )
    assert server_counters.level(None, after, measured) is None
