"""scripts/bench parity's logic (arcops.devtools.paritybench) on a real pair of levels (both benches
against the real vLLM CPU server, tests/fixtures/vllm/bench-parity-pair.json): the ratio and its
spread, and a verdict that names the bench that is wrong, or says the time differs and by how much
each saw the first token later than the server; every prompt a bench sends opens with its own
lead, so a prefix-caching server computes each; bad arguments are refused before any run."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import pytest
from arcops.devtools import paritybench
from arcops.prove import prompts

from .helpers.bench_cli import refusal

PAIR = json.loads((Path(__file__).parent / "fixtures/vllm/bench-parity-pair.json").read_text())


def _pair(arcops_tok_s: float, vllm_tok_s: float) -> dict:
    pair = {"arcops": copy.deepcopy(PAIR["arcops"]), "vllm": copy.deepcopy(PAIR["vllm"])}
    pair["arcops"]["output_throughput"], pair["vllm"]["output_throughput"] = arcops_tok_s, vllm_tok_s
    return pair


def test_the_real_levels_carry_what_the_verdict_reads():
    for level in (PAIR["arcops"], PAIR["vllm"]):
        assert level["total_output_tokens"] == 16 * 128 and level["completed"] == 16
        assert level["server"]["output_tokens"]["difference"] == 0
        assert level["server"]["mean_ttft_ms"]["server"] > 0


def test_rows_give_the_median_ratio_its_spread_and_the_verdict():
    rounds = [{1: _pair(100, 100), 2: _pair(300, 200)}, {1: _pair(102, 100), 2: _pair(210, 200)}]
    rounds.append({1: _pair(99, 100), 2: _pair(400, 200)})
    one, two = paritybench.summarize(rounds)
    assert (one["streams"], one["rounds"], one["ratio"]) == (1, 3, 1.0)
    assert (one["ratio_low"], one["ratio_high"]) == (0.99, 1.02) and one["verdict"] == "agree within 5%"
    assert (two["ratio"], two["ratio_low"], two["ratio_high"]) == (1.5, 1.05, 2.0)
    assert two["verdict"].startswith("both count what the server served; the time differs: arcops ")
    assert "time to first token over the server's own: arcops +" in two["verdict"]


def test_a_bench_that_miscounts_is_named_with_its_count():
    pair = _pair(150, 100)
    pair["vllm"]["server"]["output_tokens"].update(bench=2000, difference=2000 - 2048)
    assert paritybench.verdict(1.5, pair["arcops"], pair["vllm"]) == (
        "vllm counted output tokens 2000 against the server's 2048"
    )
    pair["arcops"]["server"] = None
    pair["vllm"]["server"] = None
    assert "no counters" in paritybench.verdict(1.5, pair["arcops"], pair["vllm"])


def test_the_vllm_bench_argv_is_the_same_load(tmp_path):
    argv = paritybench.vllm_bench_argv("py", "http://h:1", "tiny", "/m", 4, 16, 117, 128, tmp_path / "r.json")
    opts = {a: b for a, b in itertools.pairwise(argv[5:]) if a.startswith("--") and not b.startswith("--")}
    assert argv[:5] == ["py", "-m", "tests.helpers.vllm_cpu", "bench", "serve"]
    assert (opts["--backend"], opts["--endpoint"], opts["--dataset-name"]) == (
        "openai-chat",
        "/v1/chat/completions",
        "random",
    )
    assert (opts["--max-concurrency"], opts["--num-prompts"], opts["--random-input-len"]) == (
        "4",
        "16",
        "117",
    )
    assert "--ignore-eos" in argv and argv[argv.index("--random-output-len") + 1] == "128"
    assert argv[argv.index("--result-filename") + 1] == "r.json"


def test_every_request_opens_with_its_own_lead_of_the_same_length():
    sized = prompts.needle_messages("0", 400, prompts.lead(0))
    firsts = {
        prompts.leading(sized, i, run)[0]["content"][:40] for i in range(50) for run in ("a1b2c3", "d4e5f6")
    }
    assert len(firsts) == 100
    assert all(
        len(prompts.leading(sized, i, "a1b2c3")[0]["content"]) == len(sized[0]["content"]) for i in range(50)
    )
    # Past the lead, the prompt is the sized one.
    assert prompts.leading(sized, 7, "a1b2c3")[0]["content"].endswith(
        sized[0]["content"][len(prompts.lead(0)) :]
    )


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--rounds", "0"], "--rounds is 0, must be from 1 to 50"),
        (["--concurrency", "1,x"], "--concurrency: 'x' is not a whole number"),
        (["--output-tokens", "1"], "--output-tokens is 1, must be from 2 to 4096"),
        (["--url", "http://127.0.0.1:9"], "--url needs --model and --tokenizer"),
        (["--json", "/nonexistent-folder/p.json"], "does not exist"),
    ],
)
def test_bad_arguments_are_refused_before_any_run(argv, said, capsys):
    err = refusal(paritybench.main, argv, capsys)
    assert said in err and len(err.strip().splitlines()) == 1


def test_docs_quote_the_recorded_benchmark():
    """docs/prove.md's parity figures are docs/bench/parity.json's (written by scripts/bench parity),
    and what it says of the counters holds in every recorded run."""
    root = Path(__file__).resolve().parents[1]
    recorded = json.loads((root / "docs" / "bench" / "parity.json").read_text())
    text = " ".join((root / "docs" / "prove.md").read_text().split())
    stated = "; ".join(
        f"{r['streams']} stream(s): ratio {r['ratio']:.3f} ({r['ratio_low']:.3f}-{r['ratio_high']:.3f})"
        for r in recorded["rows"]
    )
    assert stated in text, f"docs/prove.md should say: {stated}"
    levels = [level for one in recorded["rounds"] for pair in one.values() for level in pair.values()]
    assert (
        f"{len(recorded['rounds'])} rounds, {recorded['requests']} requests of {recorded['output_tokens']}"
        in text
    )
    assert all(
        level["server"]["output_tokens"]["difference"] == 0 and level["server"]["requests"]["difference"] == 0
        for level in levels
    )
