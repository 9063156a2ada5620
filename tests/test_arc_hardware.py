"""Checks that only a real dual-Arc box can pass. Skipped elsewhere; never faked.

Run on the box (docs/hardware-check.md): ARCOPS_ARC_HARDWARE=1 .venv/bin/pytest -m arc_hardware
"""

import os

import pytest
from arcops.box import facts
from arcops.common.sysroot import SysRoot

pytestmark = pytest.mark.arc_hardware
EXPECTED_GUC = os.environ.get("ARCOPS_EXPECTED_GUC", "70.60.0")


@pytest.fixture(scope="module")
def real_box():
    data = facts.collect(SysRoot("/"))
    assert not data["simulated"], "/ is a simulated tree"
    return data


def test_two_or_more_arc_gpus_bound_to_xe(real_box):
    arc = _arc_gpus(real_box)
    assert {g["driver"] for g in arc} == {"xe"}
    assert all(g["render"] for g in arc)


def _arc_gpus(box: dict) -> list[dict]:
    """The Arc GPUs of the box; none at all fails (a hardware test never passes without them)."""
    arc = [g for g in box["gpus"] if g["model"]]
    assert len(arc) >= 2, f"fewer than two Arc GPUs here: {box['gpus']}"
    return arc


def test_every_arc_gpu_loaded_the_pinned_guc(real_box):
    arc = _arc_gpus(real_box)
    assert [g["guc_loaded"] for g in arc] == [EXPECTED_GUC] * len(arc), arc


PROBE = "/opt/arcops/llama.cpp/current/bin/arcops-alloc-probe"
ONEAPI_ENV = "/opt/arcops/llama.cpp/current/bin/oneapi-env"  # the build's oneAPI release


def test_level_zero_allocations_cost_no_host_ram():
    """The llama_cpp_sycl role's probe, run again: both Level Zero paths under 1% of 4 GiB."""
    import subprocess

    from arcops.llama import allocprobe

    done = subprocess.run([ONEAPI_ENV, PROBE, "--gib", "4"], capture_output=True, text=True, timeout=300)
    verdict = allocprobe.verdict(allocprobe.parse(done.stdout))
    assert verdict.ok, "\n".join(verdict.summary())
    # The problem the fix removes is visible on this box: sycl::malloc_device mirrors into host RAM.
    print("\n".join(verdict.summary()))


VLLM_REPORT = "/var/lib/arcops/vllm/starts/latest.json"


def test_vllm_came_up_without_xe_resets():
    """After vllm_service: the watchdog's last start was ready, with no xe event on any attempt, and
    this boot's kernel journal (not dmesg) has no engine reset or timed-out job."""
    import json
    from pathlib import Path

    from arcops.box import journal, xe_events

    report = json.loads(Path(VLLM_REPORT).read_text())
    assert report["result"] == "ready", report
    assert [a["events"] for a in report["attempts"]] == [[] for _ in report["attempts"]], report
    assert all(a["kv_cache_tokens"] for a in report["attempts"]), report
    lines = list(journal.kernel_lines(check=True))  # an unreadable journal fails, never reads as 0
    # Evidence that this boot's kernel journal holds the xe driver at all: its GuC load lines.
    assert any("xe " in line and "firmware from" in line for line in lines), "no xe lines in the journal"
    counted = xe_events.count(lines)
    hangs = {k: n for k, n in counted["by_kind"].items() if k in ("engine_reset", "timedout_job")}
    assert not any(hangs.values()), counted


GIB = 2**30
VLLM_SPEC = "/etc/arcops/vllm/spec.json"


def test_vllm_host_ram_per_card_with_the_residency_filter():
    """vLLM serving on two cards with the residency filter and the oneCCL thresholds: the dual-B60
    report's 11 GiB of host RAM per card (24-26 GiB without them). Run after a request was served."""
    import json
    import subprocess
    from pathlib import Path

    from arcops.box import drm_memory
    from arcops.vllm import vllm_spec

    spec = json.loads(Path(VLLM_SPEC).read_text())
    assert spec["residency_filter"] is not None, "vllm_service_residency_filter is off: nothing to check"
    probe = vllm_spec.residency_probe(spec)
    env = [f"{k}={v}" for k, v in probe["env"].items()]
    done = subprocess.run(
        ["docker", "exec", spec["name"], "env", *env, *probe["argv"]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe["expect"] in done.stderr, done.stderr
    found, skipped = drm_memory.clients(SysRoot("/"))
    cards = [row for row in drm_memory.per_card(found) if row["driver"] == "xe"]
    assert len(cards) >= 2 and not skipped, (cards, skipped)
    for row in cards:
        print(
            f"{row['pdev']}: {row['host_bytes'] / GIB:.1f} GiB host, {row['vram_bytes'] / GIB:.1f} GiB VRAM"
        )
    assert all(row["host_bytes"] <= 13 * GIB for row in cards), cards


def test_xe_job_timeouts_are_the_inventorys_after_the_boot(real_box):
    """docs/hardware-check.md item 18: ARCOPS_EXPECTED_JOB_TIMEOUT_MS='{"ccs": 10000}' (the
    inventory's arcops_xe_job_timeout_ms) after a reboot; unset, the driver's 5 s default."""
    import json

    from arcops.box import job_timeout_setting

    wanted = job_timeout_setting.parse_wanted(
        json.loads(os.environ.get("ARCOPS_EXPECTED_JOB_TIMEOUT_MS", "{}"))
    )
    arc = _arc_gpus(real_box)
    assert all(g["job_timeouts"]["ccs"]["default_job_timeout_max"] for g in arc), arc  # the kernel's cap
    if wanted:
        assert job_timeout_setting.mismatches(arc, wanted) == []
    else:
        assert {g["job_timeouts"]["ccs"]["job_timeout_ms"] for g in arc} == {5000}


def test_each_cards_flashed_firmware_is_read_with_igsc(real_box):
    """docs/hardware-check.md item 19, where igsc is installed: every Arc card by address."""
    flashed = real_box["card_firmware"]
    if flashed["source"] != "igsc":
        pytest.skip(f"igsc is not installed here: {flashed['source']}")
    arc = _arc_gpus(real_box)
    assert sorted(flashed["cards"]) == sorted(g["address"] for g in arc)
    assert all(card["fw"] and card["oprom_code"] for card in flashed["cards"].values()), flashed
