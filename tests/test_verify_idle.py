"""The verify stage's idle check (prove/verify.run with box/gpu_power.settle): after the load,
every xe card must fall back to near idle within the window. The cards are the dual-b60
fixture's, their energy counters driven by a simulated load on a simulated clock; the target is
one that does not answer (the check runs after any gate)."""

from __future__ import annotations

from arcops.box import gpu_power
from arcops.common.served import free_port
from arcops.common.sysroot import SysRoot
from arcops.prove import verify

from .helpers import gpu_load

TARGET = {"name": "vllm_service", "kind": "openai", "url": f"http://127.0.0.1:{free_port()}", "model": ""}


def _run(tmp_path, first, second):
    tree = gpu_load.tree(tmp_path)
    sleep, clock = gpu_load.drive(tree, first, second)

    def idle():
        return gpu_power.settle(SysRoot(tree), window=60, interval=5, sleep=sleep, clock=clock)

    return verify.run(verify.check_targets([TARGET]), verify.prompt_data(None), [], timeout=5, idle=idle)


def test_cards_back_at_rest_are_recorded_as_idle_without_their_volatile_figures(tmp_path):
    out = _run(tmp_path, lambda t: 150.0 if t < 8 else 11.0, lambda t: 14.0)
    assert out["record"]["idle_power"] == {
        "measured": True,
        "idle": True,
        "cards": {
            "0000:29:00.0": {"idle": True, "idle_below_w": 50.0},
            "0000:2d:00.0": {"idle": True, "idle_below_w": 50.0},
        },
    }
    assert not [r for r in out["reasons"] if r.startswith("idle power")]
    # The figures are in the result and the play's line.
    assert out["idle_power"]["cards"]["0000:29:00.0"]["watts"] == 11.0
    assert verify.idle_lines(out["idle_power"]) == [
        "idle power 15 s after the load: 0000:29:00.0 11 W, 0000:2d:00.0 14 W (near idle under 50 W); PASS"
    ]


def test_a_card_that_stays_busy_fails_the_box_with_its_figure(tmp_path):
    out = _run(tmp_path, lambda t: 11.0, lambda t: 120.0)
    assert out["passed"] is False and out["record"]["passed"] is False
    assert out["record"]["idle_power"]["cards"]["0000:2d:00.0"] == {
        "idle": False,
        "idle_below_w": 50.0,
        "watts": 120.0,
    }
    assert (
        "idle power: GPU 0000:2d:00.0 still draws 120 W 60 s after the load (near idle is under 50 W: "
        "a GPU that never drops to idle, llama.cpp #24946)"
    ) in out["reasons"]
    assert verify.idle_lines(out["idle_power"])[0].endswith("; FAIL")


def test_no_sensors_is_recorded_as_not_measured_and_no_target_asks_nothing():
    def idle():
        return gpu_power.settle(SysRoot(gpu_load.HOSTS / "no-intel-gpu"))

    out = verify.run(verify.check_targets([TARGET]), verify.prompt_data(None), [], timeout=5, idle=idle)
    assert out["record"]["idle_power"] == {"measured": False, "idle": None, "cards": {}}
    assert verify.idle_lines(out["idle_power"]) == ["idle power: not measured (no xe power sensors here)"]
    asked = []
    none = verify.run([], verify.prompt_data(None), [], idle=lambda: asked.append(1) or {})
    assert asked == [] and "idle_power" not in none["record"]
