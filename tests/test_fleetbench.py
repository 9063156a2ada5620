"""scripts/bench fleet (arcops.devtools.fleetbench): the simulated fleet it builds, the launcher
that splits the modules' CPU from the control node's, and one real `arcops fleet status` run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml
from arcops.devtools import fleetbench

from .helpers.bench_cli import refusal


def test_the_fleet_is_an_inventory_in_waves_with_a_tenth_behind(tmp_path):
    interpreter, _ = fleetbench.launcher(tmp_path)
    inventory = yaml.safe_load(fleetbench.make_fleet(tmp_path / "f", 20, interpreter).read_text())
    waves = inventory["all"]["children"]["arc_servers"]["children"]
    assert list(waves["canary"]["hosts"]) == ["arc-0000"] and len(waves["fleet"]["hosts"]) == 19
    assert inventory["all"]["vars"]["ansible_python_interpreter"] == str(interpreter)
    released = [
        json.loads((tmp_path / "f" / f"arc-{n:04d}" / "verify" / "state.json").read_text())["release"]
        for n in range(1, 20)
    ]
    assert released.count(fleetbench.BEHIND) == 2 and released.count(fleetbench.TARGET) == 17
    assert not (tmp_path / "f" / "arc-0000" / "verify").exists()  # the canary was never gated


def test_the_launcher_runs_the_module_and_books_its_cpu(tmp_path):
    interpreter, ledger = fleetbench.launcher(tmp_path)
    busy = "import sys; sum(range(3_000_000)); sys.exit(3)"
    done = subprocess.run([str(interpreter), "-c", busy], check=False)
    assert done.returncode == 3  # the module's own exit code
    subprocess.run([str(interpreter), "-c", "print('x')"], check=True, capture_output=True)
    seconds, calls = fleetbench.module_cpu(ledger)
    assert calls == 2 and seconds > 0.01
    assert fleetbench.module_cpu(ledger) == (0, 0)  # read once


def test_growth_is_the_cpu_per_box_at_the_largest_size_over_a_tenth_of_it():
    rows = [
        {"command": "fleet plan", "boxes": 10, "control_cpu_ms_per_box": 200.0},
        {"command": "fleet plan", "boxes": 100, "control_cpu_ms_per_box": 300.0},
        {"command": "fleet status", "boxes": 50, "control_cpu_ms_per_box": 1.0},
    ]
    assert fleetbench.growth(rows, "plan") == 1.5
    assert fleetbench.growth(rows, "status") is None


def test_fleet_status_on_a_simulated_fleet_answers_for_every_box(tmp_path):
    """Real ansible-playbook: one module call per box, booked to the launcher, the rest to the
    control node."""
    interpreter, ledger = fleetbench.launcher(tmp_path)
    row = fleetbench.run("status", fleetbench.make_fleet(tmp_path / "f", 3, interpreter), 3, ledger)
    assert (row["command"], row["boxes"], row["module_calls"]) == ("fleet status", 3, 3)
    assert 0 < row["module_cpu_s"] < row["cpu_s"] and row["control_cpu_ms_per_box"] > 0


def test_bad_options_are_refused_before_any_run(capsys):
    """The box counts are bench_output.box_counts' (tested with scripts/bench plan), to 5,000 here."""
    cases = ((["--boxes", "6000"], "from 1 to 5000"), (["--commands", "status,deploy"], "status, plan"))
    for argv, said in cases:
        assert said in refusal(fleetbench.main, argv, capsys)


def test_docs_quote_the_recorded_benchmark():
    """docs/fleet.md's per-box figures are docs/bench/fleet.json's (written by scripts/bench fleet)."""
    root = Path(__file__).resolve().parents[1]
    recorded = json.loads((root / "docs" / "bench" / "fleet.json").read_text())
    text = " ".join((root / "docs" / "fleet.md").read_text().split())
    for row in recorded["sizes"]:
        if row["boxes"] == max(r["boxes"] for r in recorded["sizes"]):
            stated = (
                f"`{row['command']}` on {row['boxes']:,} boxes: {row['wall_s']:.0f} s, "
                f"{row['control_cpu_ms_per_box']:.0f} ms of control-node CPU a box"
            )
            assert stated in text, f"docs/fleet.md should say: {stated}"
    growth = recorded["control_cpu_per_box_growth"]
    assert recorded["met"] == all(g <= recorded["growth_limit"] for g in growth.values())
    verdict = "met" if recorded["met"] else "not met"
    status, plan = growth["fleet status"], growth["fleet plan"]
    stated = f"{status:.2f} for status, {plan:.2f} for the plan, which is {verdict}"
    assert stated in text, f"docs/fleet.md should say: {stated}"
