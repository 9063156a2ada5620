"""The proof against llama.cpp: gate, bench and verify against a real llama-server, the llama-bench
wrapper and the one-GPU-against-all check, with llama.cpp's tools built for the CPU from a real
tree (tests/helpers/llama_cpu.py) and a tiny GGUF converted by the tree's own converter.

The CPU stands in for the GPUs: the same-output check runs both setups for real (the whole
model on one device, split by layers), but on one CPU device both are the same placement, so
it proves the check's mechanics; that one GPU and two answer alike is a hardware check
(docs/hardware-check.md), as is the host RAM a two-GPU load costs.
"""

import json
import os
import re
import socket
import stat

import pytest
from arcops import cli
from arcops.llama import llama_bench, same_output
from arcops.prove import bench, gate, verify
from arcops.prove.openai_api import Endpoint
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .helpers import llama_cpu

# Real llama-bench output (b11434 built here for the CPU; pp64 and tg16, 2 repetitions each).
FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "llama_bench", "b11434-cpu.json")


@pytest.fixture(scope="module")
def tools():
    try:
        return llama_cpu.build()
    except RuntimeError as e:  # a missing build fails (scripts/bootstrap makes it), never skips
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def llama_server(tools, tmp_path_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = llama_cpu.Server(port, tmp_path_factory.mktemp("llama") / "server.log", ["--jinja"]).start()
    yield server
    server.stop()


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ gate, bench, verify on llama-server


def test_the_gate_asks_llama_server_both_ways(llama_server):
    endpoint = Endpoint(llama_server.url)
    (model,) = [m["id"] for m in endpoint.models()]
    report = gate.run(endpoint, model, gate.prompt_set.DEFAULT)
    # llama-server says its context in /props; the needle is sized in its own /tokenize tokens.
    assert report["max_model_len"] == 2048 and len(report["prompts"]) == 10
    for p in report["prompts"]:
        for run in ("sequential", "concurrent"):
            assert p[run].get("error") is None, (p["id"], p[run])
            assert p[run]["completion_tokens"], (p["id"], p[run])
    needle = next(p for p in report["prompts"] if p["id"] == "needle")
    assert 1000 <= needle["sequential"]["prompt_tokens"] <= 0.8 * 2048
    assert report["passed"] is False  # random weights: every answer wrong, and the gate says so


def test_bench_measures_llama_server(llama_server):
    endpoint = Endpoint(llama_server.url)
    (model,) = [m["id"] for m in endpoint.models()]
    result = bench.run(endpoint, model, [1, 2], [256], 16, 4, stack="llama.cpp cpu")
    assert [d["max_concurrency"] for d in result["decode"]] == [1, 2]
    for d in result["decode"]:
        assert d["completed"] == 4 and d["failed"] == 0 and d["output_throughput"] > 0
        assert d["total_output_tokens"] == 4 * 16  # from the server's usage, not from chunks
    (prefill,) = result["prefill"]
    assert 0.9 * 256 <= prefill["input_tokens"] <= 256 and prefill["prefill_throughput"] > 0


def test_verify_asks_the_one_model_llama_server_serves(llama_server):
    (target,) = verify.check_targets(
        [{"name": "llama_cpp_sycl", "url": llama_server.url, "kind": "llama-server"}]
    )
    out = verify.run([target], gate.prompt_set.DEFAULT, [])
    summary = out["record"]["targets"]["llama_cpp_sycl"]
    assert summary["model"].endswith(llama_cpu.MODEL_NAME) and summary["prompts"] == 10
    # Random weights: (nearly) every answer wrong; which one a build gets right by chance varies.
    assert re.match(r"llama_cpp_sycl: [0-9] of 10 right in both runs", out["reasons"][0]), out["reasons"]


# ------------------------------------------------------------------ llama-bench


def test_llama_bench_records_mean_and_stddev(tools, tmp_path, capsys):
    result_file = tmp_path / "bench.json"
    argv = [
        "llama",
        "bench",
        "--llama-bench",
        str(tools / "bin/llama-bench"),
        "--model",
        str(tools / llama_cpu.MODEL_NAME),
    ]
    argv += ["--tests", "pp64,tg16", "--repetitions", "2", "--output", str(result_file), "--progress"]
    argv += ["--", "-t", "2"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    result = json.loads(result_file.read_text())
    assert [r["test"] for r in result["results"]] == ["pp64", "tg16"]
    for r in result["results"]:
        assert r["mean_ts"] > 0 and r["stddev_ts"] >= 0 and r["repetitions"] == 2
        assert r["model_filename"].endswith(llama_cpu.MODEL_NAME) and r["backends"] == "CPU"
        assert r["n_threads"] == 2
    assert out.splitlines()[0].split() == ["test", "tok/s", "stddev", "runs", "backends", "ngl", "split"]
    assert "[llama-bench] pp64,tg16, 2 repetition(s) each" in err


def test_the_real_llama_bench_output_parses():
    with open(FIXTURE) as f:
        rows = llama_bench.parse(f.read())
    assert [r["test"] for r in rows] == ["pp64", "tg16"]
    # Built from an sdist (no git): llama.cpp's build info says 0 / unknown.
    assert all(r["build_number"] == 0 and r["repetitions"] == 2 and r["backends"] == "CPU" for r in rows)
    assert rows[0]["mean_ts"] == 72324.261014 and rows[0]["samples_ts"] == [64418.5, 80230.1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tests", "pp512,xx"], "'xx' is not ppN or tgN"),
        (["--tests", "pp0"], "'pp0' is not ppN or tgN"),
        (["--repetitions", "500"], "--repetitions 500: must be 1 to 100"),
        (["--model", "/nonexistent.gguf"], "--model /nonexistent.gguf: not a file"),
        (["--llama-bench", "/nonexistent"], "--llama-bench /nonexistent: no such program"),
        (["--llama-bench", "{garbage}"], "llama-bench output: not JSON"),
        (["--llama-bench", "{fails}"], "llama-bench exited with 3: no model here"),
        (["--", "--no-such-flag"], "llama-bench exited with 1"),
    ],
)
def test_llama_bench_bad_input_is_one_line_and_exit_2(tools, tmp_path, capsys, argv, message):
    # Programs that fail the ways llama-bench can: print garbage, exit non-zero.
    for name, body in (("garbage", "echo 'not json'"), ("fails", "echo 'no model here' >&2; exit 3")):
        script = tmp_path / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    args = {"--llama-bench": str(tools / "bin/llama-bench"), "--model": str(tools / llama_cpu.MODEL_NAME)}
    args["--tests"], args["--repetitions"] = "tg4", "1"
    extra = argv[1:] if argv[0] == "--" else []
    for flag, value in zip(argv[::2], argv[1::2], strict=True) if not extra else []:
        args[flag] = value.replace("{garbage}", str(tmp_path / "garbage")).replace(
            "{fails}", str(tmp_path / "fails")
        )
    code, out, err = run_cli(
        capsys, "llama", "bench", *[x for kv in args.items() for x in kv], *(["--", *extra] if extra else [])
    )
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert message in err


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=15,
)
_ROW = st.fixed_dictionaries(
    {"n_prompt": st.integers(-1, 600) | _JSON, "n_gen": st.integers(-1, 200) | _JSON},
    optional={
        "avg_ts": st.floats() | _JSON,
        "stddev_ts": st.floats(),
        "samples_ts": st.lists(st.floats()) | _JSON,
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ROW | _JSON, max_size=3).map(json.dumps) | st.text(max_size=30))
@example('[{"n_prompt": 1e400, "n_gen": 0, "avg_ts": 1, "stddev_ts": 0}]')
@example('[{"n_prompt": 0.5, "n_gen": 0, "avg_ts": 1, "stddev_ts": 0}]')
def test_any_llama_bench_output_parses_or_is_refused_in_one_line(text):
    try:
        rows = llama_bench.parse(text)
    except llama_bench.LlamaBenchError as e:
        assert str(e) and "\n" not in str(e)
    else:
        assert rows and all(r["mean_ts"] == r["mean_ts"] for r in rows)


# ------------------------------------------------------------------ one GPU against all


def test_one_device_and_a_layer_split_answer_byte_for_byte_alike(tools, tmp_path, capsys):
    argv = [
        "llama",
        "same-output",
        "--llama-server",
        str(tools / "bin/llama-server"),
        "--model",
        str(tools / llama_cpu.MODEL_NAME),
    ]
    argv += [
        "--output",
        str(tmp_path / "same.json"),
        "--log-dir",
        str(tmp_path),
        "--",
        "--ctx-size",
        "2048",
        "--threads",
        "2",
    ]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, out + err
    result = json.loads((tmp_path / "same.json").read_text())
    assert result["same"] is True and result["differ"] == [] and result["errors"] == []
    for name, setup in result["setups"].items():
        assert " ".join(same_output.SETUPS[name]) in " ".join(setup["argv"])
        load = setup["load"]
        assert load["server_rss_peak_gib"] > 0 and load["load_seconds"] > 0
        assert load["host_ram_used_peak_gib"] is not None and load["server_gtt_peak_gib"] == 0  # no DRM here
        assert len(setup["gate"]["prompts"]) == 10
    assert result["model_gib"] > 0
    assert out.rstrip().endswith("answers byte-identical on one GPU and on all; SAME")
    assert (tmp_path / "llama-server-one.log").is_file() and (tmp_path / "llama-server-all.log").is_file()


def test_answers_that_differ_are_named():
    def report(texts):
        return {"prompts": [{"id": k, "sequential": {"text": v}} for k, v in texts.items()]}

    one = same_output.texts(report({"a": "61", "b": "forty-seven"}))
    every = same_output.texts(report({"a": "61", "b": "forty seven"}))
    assert [k for k in one if one[k] != every[k]] == ["b"]


def test_process_memory_reads_rss_and_drm_gtt(tmp_path):
    proc = tmp_path / "proc"
    (proc / "7" / "fdinfo").mkdir(parents=True)
    (proc / "7" / "status").write_text("Name:\tllama-server\nVmRSS:\t  2048 kB\n")
    # As xe writes it (drm-usage-stats): one line per memory region, sizes with a unit; a client
    # seen through two fds counts once.
    xe = "pos:\t0\ndrm-driver:\txe\ndrm-client-id:\t{}\ndrm-pdev:\t0000:03:00.0\ndrm-total-gtt:\t{}\n"
    (proc / "7" / "fdinfo" / "5").write_text(xe.format(4, "3 MiB") + "drm-total-vram0:\t9 GiB\n")
    (proc / "7" / "fdinfo" / "6").write_text(xe.format(5, "512 KiB"))
    (proc / "7" / "fdinfo" / "8").write_text(xe.format(5, "512 KiB"))
    (proc / "7" / "fdinfo" / "7").write_text("pos:\t0\nflags:\t02\n")
    assert same_output.process_memory(7, proc) == (2048 * 1024, 3 * 2**20 + 512 * 2**10)
    assert same_output.process_memory(8, proc) == (0, 0)


def test_same_output_bad_input_is_one_line_and_exit_2(tools, tmp_path, capsys):
    model = str(tools / llama_cpu.MODEL_NAME)
    for argv, message in [
        (
            ["--llama-server", "/nonexistent", "--model", model],
            "--llama-server /nonexistent: no such program",
        ),
        (
            ["--llama-server", str(tools / "bin/llama-server"), "--model", "/no.gguf"],
            "--model /no.gguf: not a file",
        ),
        (
            ["--llama-server", str(tools / "bin/llama-server"), "--model", model, "--", "--no-such-flag"],
            "llama-server exited with 1 before it was ready",
        ),
    ]:
        code, out, err = run_cli(capsys, "llama", "same-output", *argv)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert message in err
