"""scripts/bench plan's logic (arcops.devtools.planbench): what it plans is what a rollout plans,
its JSON says every size's cost, and bad arguments are refused before any run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from arcops.devtools import bench_output, planbench
from arcops.fleet import waves
from hypothesis import given
from hypothesis import strategies as st

from .helpers.bench_cli import refusal
from .helpers.fuzz import FUZZ


def test_the_synthetic_fleet_plans_as_a_rollout_would():
    given = planbench.fleet(200)
    planned = planbench.plan_once(given, [])
    actions = [row["action"] for row in planned["boxes"]]
    assert len(actions) == 200 and planned["boxes"][0]["wave"] == "canary"
    assert actions.count("upgrade") == 20 and actions.count("downgrade") == 2  # a tenth behind, 1 % ahead
    assert len(planned["problems"]) == 2 and "newer than the target" in planned["problems"][0]
    # Batches of 1 then 25 % of the fleet wave, as Ansible's serial runs them.
    fleet = [
        w for w in waves.waves(given["groups"], given["members"], planbench.SERIAL) if w["wave"] == "fleet"
    ]
    assert [len(w["hosts"]) for w in fleet] == [1, 49, 49, 49, 49, 2]


def test_the_json_gives_each_size_its_cost_and_the_growth(tmp_path, capsys):
    out = tmp_path / "plan.json"
    assert planbench.main(["--boxes", "10,100", "--runs", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [row["boxes"] for row in result["sizes"]] == [10, 100]
    assert all(row["median_s"] > 0 and row["planned"] == row["boxes"] for row in result["sizes"])
    assert result["per_box_growth"] > 0 and result["met"] is True
    assert "target: 10,000 boxes in at most 1.0 s" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--boxes", "100,10"], "rising"),
        (["--boxes", "0"], "counts from 1"),
        (["--boxes", "ten"], "not a comma-separated list"),
        (["--runs", "0"], "invalid choice"),
        (["--json", "/nonexistent/folder/plan.json"], "does not exist"),
    ],
)
def test_bad_arguments_are_refused_before_any_run(argv, said, capsys):
    assert said in refusal(planbench.main, argv, capsys)


def test_docs_quote_the_recorded_benchmark():
    """docs/fleet.md's planning figures are docs/bench/plan.json's (written by scripts/bench plan)."""
    root = Path(__file__).resolve().parents[1]
    recorded = json.loads((root / "docs" / "bench" / "plan.json").read_text())
    largest = recorded["sizes"][-1]
    text = " ".join((root / "docs" / "fleet.md").read_text().split())
    stated = (
        f"holds {largest['median_s']:.3f} s for {largest['boxes']:,} boxes, "
        f"{largest['us_per_box']:.1f} µs a box, and {recorded['per_box_growth']:.2f} for the cost a box"
    )
    assert stated in text, f"docs/fleet.md should say: {stated}"
    assert recorded["met"] is True


COUNT_LISTS = st.lists(st.integers(-5, 200_000), max_size=6).map(lambda v: ",".join(map(str, v)))


@FUZZ
@given(st.text(max_size=40) | COUNT_LISTS)
def test_box_counts_answer_rising_counts_in_bounds_or_refuse(text):
    """bench_output.box_counts (scripts/bench plan and fleet): any text is a rising list of counts
    from 1 to the bound, or a one-line argparse refusal naming it."""
    try:
        sizes = bench_output.box_counts(100_000)(text)
    except argparse.ArgumentTypeError as e:
        assert repr(text) in str(e) and "\n" not in str(e).replace(repr(text), "")
        return
    assert sizes and list(sizes) == sorted(set(sizes)) and all(1 <= s <= 100_000 for s in sizes)
