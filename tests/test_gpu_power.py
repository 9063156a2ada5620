"""box/gpu_power.py on the fixture trees' xe hwmon folders (the driver's attribute names and
units): limits, temperatures and fans per card; power from the energy counter; and whether the
cards settle to idle, with the counter driven by a simulated card on a simulated clock."""

from __future__ import annotations

import shutil

import pytest
from arcops.box import gpu_power
from arcops.common.sysroot import SysRoot
from hypothesis import given
from hypothesis import strategies as st

from .helpers import gpu_load
from .helpers.fuzz import FUZZ

HOSTS, HWMON = gpu_load.HOSTS, gpu_load.HWMON


def test_each_xe_card_s_limits_temperatures_and_fans():
    found = gpu_power.cards(SysRoot(HOSTS / "dual-b60"))
    assert [c["card"] for c in found] == ["0000:29:00.0", "0000:2d:00.0"]
    card = found[0]
    # PL1 and PL2 are the limits to compare power with; crit is the reactive ceiling.
    assert card["limits_w"] == {"max": 200.0, "cap": 240.0, "crit": 300.0}
    assert card["temps_c"] == {"pkg": 41.0, "vram": 46.0}
    assert card["fans_rpm"] == {"fan1": 1150, "fan2": 1150, "fan3": 0}
    assert card["energy_j"] == 512345.678901
    assert gpu_power.cards(SysRoot(HOSTS / "dual-b70"))[0]["limits_w"]["max"] == 230.0


def test_only_xe_cards_count():
    # The iGPU (i915) has no xe hwmon; a box without Intel GPUs has none.
    assert [c["card"] for c in gpu_power.cards(SysRoot(HOSTS / "mixed-igpu-display"))] == [
        "0000:29:00.0",
        "0000:2d:00.0",
    ]
    assert gpu_power.cards(SysRoot(HOSTS / "no-intel-gpu")) == []


def test_power_comes_from_the_energy_counter(tmp_path):
    tree = gpu_load.tree(tmp_path)
    sleep, clock = gpu_load.drive(tree, lambda t: 150.0, lambda t: 12.5)
    watts = gpu_power.sample(SysRoot(tree), 2.0, sleep, clock)
    assert watts == {"0000:29:00.0": pytest.approx(150.0), "0000:2d:00.0": pytest.approx(12.5)}


def test_cards_that_fall_to_idle_after_the_load_pass(tmp_path):
    tree = gpu_load.tree(tmp_path)
    # Both at 180 W until 12 s after the load, then resting (12 W, 18 W; idle is under 50 W).
    sleep, clock = gpu_load.drive(
        tree, lambda t: 180.0 if t < 12 else 12.0, lambda t: 180.0 if t < 12 else 18.0
    )
    settled = gpu_power.settle(SysRoot(tree), window=60, interval=5, sleep=sleep, clock=clock)
    assert settled["measured"] and settled["idle"] is True
    assert settled["seconds"] == 20.0  # 0-5 and 5-10 busy, 10-15 partly, 15-20 at rest
    assert settled["cards"]["0000:2d:00.0"] == {"watts": 18.0, "idle_below_w": 50.0, "idle": True}


def test_a_card_that_never_drops_to_idle_fails_within_the_window(tmp_path):
    tree = gpu_load.tree(tmp_path)
    sleep, clock = gpu_load.drive(tree, lambda t: 12.0, lambda t: 95.0)  # llama.cpp #24946's symptom
    settled = gpu_power.settle(SysRoot(tree), window=60, interval=5, sleep=sleep, clock=clock)
    assert settled["measured"] and settled["idle"] is False
    assert settled["seconds"] == 60.0
    assert settled["cards"]["0000:2d:00.0"] == {"watts": 95.0, "idle_below_w": 50.0, "idle": False}
    assert settled["cards"]["0000:29:00.0"]["idle"] is True


def test_no_sensors_or_a_counter_that_went_back_is_not_measured(tmp_path):
    calls = []
    nothing = gpu_power.settle(SysRoot(HOSTS / "no-intel-gpu"), sleep=calls.append)
    assert nothing == {"measured": False, "idle": None, "seconds": 0.0, "cards": {}} and calls == []
    tree = gpu_load.tree(tmp_path)
    sleep, clock = gpu_load.drive(tree, lambda t: -50.0, lambda t: 10.0)  # a driver reload resets it
    settled = gpu_power.settle(SysRoot(tree), window=10, interval=5, sleep=sleep, clock=clock)
    assert settled["measured"] is False and settled["idle"] is None
    assert settled["cards"]["0000:29:00.0"]["watts"] is None


ATTRIBUTES = ["power1_max", "power1_cap", "energy1_input", "temp2_input", "fan1_input", "temp2_label"]


@FUZZ
@given(st.dictionaries(st.sampled_from(ATTRIBUTES), st.binary(max_size=40), max_size=6))
def test_any_attribute_contents_read_as_numbers_or_nothing(tmp_path_factory, contents):
    tree = tmp_path_factory.mktemp("fuzz") / "box"
    shutil.copytree(HOSTS / "dual-b60", tree, symlinks=True)
    folder = next((tree / HWMON.format(card="0000:29:00.0")).glob("hwmon*"))
    for name, data in contents.items():
        (folder / name).write_bytes(data)
    (card, _) = gpu_power.cards(SysRoot(tree))
    for value in [*card["limits_w"].values(), card["energy_j"], *card["temps_c"].values()]:
        assert value is None or (isinstance(value, float) and value >= 0)
    assert all(isinstance(v, int) and v >= 0 for v in card["fans_rpm"].values())
