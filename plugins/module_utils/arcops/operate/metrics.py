"""A box's state as Prometheus metrics, for node_exporter's textfile collector.

Read from what the box already records, the same files `arcops status` and `arcops fleet status`
read: the stages' published records (the stack each one installed, the last verify: gate and
bench), the watchdog's last start report, the GPUs the box sees (GuC loaded per card, whether
Linux allows peer-to-peer DMA per pair), and this boot's kernel journal (xe events per card).
Nothing here asks a service or a GPU.

Each xe card's power limits, energy counter, temperatures and fans (the driver's hwmon) are
given by its PCI address: node_exporter's hwmon collector has them too, named by sysfs path.

Text exposition format 0.0.4 (common.prometheus_text): every family has HELP and TYPE; label
values are escaped. Stdlib only: it runs on the box.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..box import xe_events
from ..common.numbers import finite_or_none as _number
from ..common.prometheus_text import Family
from ..common.records import as_dict as _dict

PREFIX = "arcops_"


def _timestamp(text: Any) -> float | None:
    """Seconds since the epoch of an ISO time the records write ('2026-12-03T14:00:00Z')."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _stack(records: dict, facts: dict) -> Family:
    intel = _dict(records.get("intel_stack"))
    llama = _dict(records.get("llama_cpp_sycl"))
    vllm = _dict(records.get("vllm_service"))
    verify = _dict(records.get("verify"))
    family = Family(
        f"{PREFIX}stack_info",
        "gauge",
        "What the box runs (value 1): verified release, kernel, Intel bundle, llama.cpp build, vLLM image.",
    )
    family.add(
        1,
        release=verify.get("release") or "",
        kernel=_dict(facts.get("host")).get("kernel") or "",
        intel_bundle=_dict(intel.get("target")).get("bundle") or "",
        guc_pinned=_dict(intel.get("target")).get("guc") or "",
        llama_cpp=llama.get("build_id") or "",
        vllm_image=vllm.get("image") or "",
        vllm_spec=(vllm.get("spec_hash") or "")[:12],
    )
    return family


def _gpus(facts: dict, lines: list[str] | None) -> list[Family]:
    guc = Family(f"{PREFIX}gpu_guc_info", "gauge", "GuC firmware the xe driver loaded, per card (value 1).")
    events = Family(
        f"{PREFIX}xe_events_total",
        "counter",
        "xe driver events in this boot's kernel journal, per card and kind (engine resets, timed-out jobs).",
    )
    readable = Family(
        f"{PREFIX}xe_journal_readable",
        "gauge",
        "1 when this boot's kernel journal was read for xe events; 0 when it could not be (no xe figures).",
    )
    p2p = Family(
        f"{PREFIX}gpu_p2p_allowed",
        "gauge",
        "1 when Linux allows peer-to-peer DMA between the two GPUs (route: switch or host bridge), "
        "0 when it refuses.",
    )
    for pair in _dict(facts.get("p2p")).get("pairs") or []:
        if isinstance(pair, dict) and isinstance(pair.get("allowed"), bool):
            p2p.add(
                int(pair["allowed"]),
                a=pair.get("a") or "",
                b=pair.get("b") or "",
                route=pair.get("route") or "",
            )
    timeout = Family(
        f"{PREFIX}gpu_job_timeout_seconds",
        "gauge",
        "xe resets a job on this engine class that runs longer (job_timeout_ms; set by "
        "arcops_xe_job_timeout_ms).",
    )
    cap = Family(
        f"{PREFIX}gpu_job_timeout_cap_seconds",
        "gauge",
        "The most job_timeout_ms this kernel takes for the engine class (its build-time cap).",
    )
    flashed = Family(
        f"{PREFIX}gpu_card_firmware_info",
        "gauge",
        "Firmware flashed on the card (igsc, where installed): kind fw (GSC), oprom_code, oprom_data, "
        "fw_data (value 1).",
    )
    for address, kinds in sorted(_dict(_dict(facts.get("card_firmware")).get("cards")).items()):
        for kind, flashed_version in sorted(_dict(kinds).items()):
            if isinstance(flashed_version, str):
                flashed.add(1, card=str(address), kind=str(kind), version=flashed_version)
    cards = [g for g in facts.get("gpus") or [] if isinstance(g, dict) and g.get("driver") == "xe"]
    for gpu in cards:
        guc.add(1, card=gpu.get("address") or "", version=gpu.get("guc_loaded") or "unknown")
        for cls, found in sorted(_dict(gpu.get("job_timeouts")).items()):
            found = _dict(found)
            for family, key in ((timeout, "job_timeout_ms"), (cap, "default_job_timeout_max")):
                ms = found.get(key)
                if isinstance(ms, int) and not isinstance(ms, bool):
                    family.add(ms / 1000, card=gpu.get("address") or "", **{"class": str(cls)})
    readable.add(0 if lines is None else 1)
    if lines is not None:
        by_device = xe_events.count(lines)["by_device"]
        addresses = [str(g.get("address") or "") for g in cards] + sorted(
            set(by_device) - {g.get("address") for g in cards}
        )
        for address in addresses:
            found = by_device.get(address, {})
            for kind in xe_events.KINDS:
                events.add(found.get(kind, 0), card=address, kind=kind)
    return [guc, flashed, timeout, cap, p2p, events, readable]


def _power(cards: list[dict] | None) -> list[Family]:
    """Each xe card's hwmon figures by its PCI address (box.gpu_power.cards): node_exporter's
    hwmon series name a card by its sysfs path instead, and the driver's limits are easy to
    misread (power1_crit is not a cap). Power and the idle flag are the rules' (rate() of the
    energy counter against the sustained limit: monitoring/prometheus/arcops.rules.yml)."""
    limit = Family(
        f"{PREFIX}gpu_power_limit_watts",
        "gauge",
        "The card's power limits (hwmon): max the sustained limit PL1, cap the burst limit PL2, "
        "crit the reactive critical limit.",
    )
    energy = Family(
        f"{PREFIX}gpu_energy_joules_total", "counter", "Energy the whole card drew (hwmon energy1)."
    )
    temp = Family(f"{PREFIX}gpu_temperature_celsius", "gauge", "The card's temperatures (hwmon: pkg, vram).")
    fan = Family(f"{PREFIX}gpu_fan_rpm", "gauge", "The card's fans, where the driver exposes them (hwmon).")
    for card in cards or []:
        for kind, watts in sorted(card["limits_w"].items()):
            limit.add(watts, card=card["card"], limit=kind)
        energy.add(card["energy_j"], card=card["card"])
        for sensor, celsius in sorted(card["temps_c"].items()):
            temp.add(celsius, card=card["card"], sensor=sensor)
        for name, rpm in sorted(card["fans_rpm"].items()):
            fan.add(rpm, card=card["card"], fan=name)
    return [limit, energy, temp, fan]


def _clocks(clocks: list[dict] | None, memory: list[dict] | None) -> list[Family]:
    """Each xe card's GT frequencies and VRAM (box.gpu_clocks.cards), and the VRAM its DRM clients
    hold (box.drm_memory.per_card; None when some process could not be read: no partial sums)."""
    freq = Family(
        f"{PREFIX}gpu_frequency_mhz",
        "gauge",
        "The GT's frequencies (xe freq0): act what it runs at (0 in RC6), cur, min, max, rp0, rpe, rpn.",
    )
    total = Family(f"{PREFIX}gpu_vram_bytes", "gauge", "The card's VRAM (xe physical_vram_size_bytes).")
    used = Family(
        f"{PREFIX}gpu_vram_used_bytes", "gauge", "VRAM resident for the card's DRM clients (fdinfo)."
    )
    held = {row["pdev"]: row["vram_bytes"] for row in memory or [] if row.get("driver") == "xe"}
    for card in clocks or []:
        for gt, kinds in sorted(card["freq_mhz"].items()):
            for kind, mhz in sorted(kinds.items()):
                freq.add(mhz, card=card["card"], gt=gt, kind=kind)
        if card["vram_bytes"] is not None:
            total.add(card["vram_bytes"], card=card["card"])
        if memory is not None:
            used.add(held.get(card["card"], 0), card=card["card"])
    return [freq, total, used]


def _out_of_service(vllm: dict, mark: dict | None) -> Family:
    """1 while the box is out of service (a wedged GPU, or a server stuck after its restart;
    vllm/out_of_service.py), 0 in service."""
    family = Family(
        f"{PREFIX}vllm_out_of_service",
        "gauge",
        "1 while vLLM is kept stopped until the box reboots (state: wedged, a failed GT reset; stuck, "
        "stalled again after the health watch's restart), else 0.",
    )
    if vllm:  # a box that serves no vLLM has nothing to be out of
        state = str((mark or {}).get("state") or ("wedged" if mark else ""))
        family.add(1 if mark else 0, cards=",".join((mark or {}).get("cards") or []), state=state)
    return family


def _vllm_p2p(vllm: dict) -> Family:
    """The vLLM service's own P2P decision, as its record keeps it (vllm/peer_access.py)."""
    family = Family(
        f"{PREFIX}vllm_p2p_enabled",
        "gauge",
        "1 when the vLLM service runs with peer-to-peer between its GPUs, 0 when not "
        "(setting: auto, true or false).",
    )
    p2p = _dict(vllm.get("p2p"))
    if isinstance(p2p.get("enabled"), bool):
        setting = p2p.get("setting")
        family.add(int(p2p["enabled"]), setting="auto" if setting is None else str(setting).lower())
    return family


def _start(report: dict | None) -> list[Family]:
    ready = Family(f"{PREFIX}vllm_start_ready", "gauge", "1 when the last vLLM start came up ready, else 0.")
    attempts = Family(
        f"{PREFIX}vllm_start_attempts", "gauge", "Starts the watchdog made for the last (re)start."
    )
    kv = Family(
        f"{PREFIX}vllm_kv_cache_tokens", "gauge", "KV cache tokens vLLM sized at its last ready start."
    )
    when = Family(f"{PREFIX}vllm_start_timestamp_seconds", "gauge", "When the last vLLM (re)start began.")
    families = [ready, attempts, kv, when]
    if report is None:
        return families
    ready.add(1 if report.get("result") == "ready" else 0, result=report.get("result") or "none")
    attempts_seen = report.get("attempts")
    tried = [a for a in attempts_seen if isinstance(a, dict)] if isinstance(attempts_seen, list) else []
    attempts.add(len(tried))
    ready_kv = [_number(a.get("kv_cache_tokens")) for a in tried if a.get("outcome") == "ready"]
    kv.add(next((k for k in reversed(ready_kv) if k is not None), None))
    when.add(_timestamp(report.get("started_at")))
    return families


def _verify(verify: dict) -> list[Family]:
    passed = Family(f"{PREFIX}verify_passed", "gauge", "1 when the box's last verify stage passed, else 0.")
    right = Family(
        f"{PREFIX}gate_right", "gauge", "Prompts answered right in both runs at the last gate, per service."
    )
    asked = Family(f"{PREFIX}gate_prompts", "gauge", "Prompts asked at the last gate, per service.")
    decode = Family(
        f"{PREFIX}bench_decode_tokens_per_second",
        "gauge",
        "Decode output tokens per second at the last bench, per service and concurrent streams.",
    )
    families = [passed, right, asked, decode]
    if not verify:
        return families
    passed.add(1 if verify.get("passed") is True else 0)
    for name, target in sorted(_dict(verify.get("targets")).items()):
        target = _dict(target)
        right.add(_number(target.get("right")), service=name)
        asked.add(_number(target.get("prompts")), service=name)
        for streams, value in sorted(_dict(_dict(target.get("bench")).get("decode")).items()):
            decode.add(_number(value), service=name, streams=streams)
    return families


def _health(
    restarts: list[float] | None, latest: dict | None, now: float, server: str = "vllm"
) -> list[Family]:
    """SERVER's health watch (vllm, llama): its restarts in the last hour and its last report."""
    count = Family(
        f"{PREFIX}{server}_health_restarts_last_hour",
        "gauge",
        "Restarts the health watch made in the last hour (its policy's count).",
    )
    last = Family(
        f"{PREFIX}{server}_health_report_timestamp_seconds",
        "gauge",
        "When the health watch last reported a stall, an xe event or silence (by state, restarted).",
    )
    if restarts is not None:
        from ..vllm.health import within_hour  # the policy's own count

        count.add(len(within_hour(restarts, now)))
    if isinstance(latest, dict) and isinstance(latest.get("state"), str):
        restarted = "true" if latest.get("restarted") is True else "false"
        last.add(_number(latest.get("at_epoch")), state=latest["state"], restarted=restarted)
    return [count, last]


def _wedged_reboots(times: list[float] | None) -> Family:
    family = Family(
        f"{PREFIX}wedged_reboots_last_day",
        "gauge",
        "Reboots the health watches asked for a wedged GPU in the last 24 hours (their limit's count).",
    )
    if times is not None:
        family.add(len(times))
    return family


def collect(
    records: dict,
    facts: dict,
    start_report: dict | None,
    kernel_lines: list[str] | None,
    now: float,
    health: tuple[list[float] | None, dict | None] = (None, None),
    power: list[dict] | None = None,
    out_of_service: dict | None = None,
    clocks: list[dict] | None = None,
    memory: list[dict] | None = None,
    llama_health: tuple[list[float] | None, dict | None] = (None, None),
    wedged_reboots: list[float] | None = None,
) -> list[Family]:
    """Every family, from the records (as arcops.common.records.read_published), the facts
    (arcops.box.facts.collect), the last start report, this boot's kernel lines (None: unreadable),
    the health watch's (restart times, latest report), the cards' hwmon figures
    (arcops.box.gpu_power.cards), the out-of-service mark (arcops.vllm.out_of_service.read), the
    cards' clocks and VRAM (arcops.box.gpu_clocks.cards), their DRM clients' memory
    (arcops.box.drm_memory.per_card, None when not every process could be read), llama-server's
    health watch's (as vLLM's) and the reboots for a wedged GPU (arcops.vllm.out_of_service.reboots,
    None when the box keeps no ledger)."""
    records = {k: v for k, v in records.items() if isinstance(v, dict)}
    families = [_stack(records, facts), *_gpus(facts, kernel_lines), *_power(power), *_clocks(clocks, memory)]
    families += _start(start_report)
    families.append(_vllm_p2p(_dict(records.get("vllm_service"))))
    families.append(_out_of_service(_dict(records.get("vllm_service")), out_of_service))
    families += _health(*health, now)
    families += _health(*llama_health, now, "llama")
    families.append(_wedged_reboots(wedged_reboots))
    families += _verify(_dict(records.get("verify")))
    stamp = Family(f"{PREFIX}metrics_timestamp_seconds", "gauge", "When these metrics were written.")
    stamp.add(now)
    return [*families, stamp]


def last_start_report(root, report_dir: Any) -> dict | None:
    """The watchdog's latest start report under report_dir (as root sees it), or None when there
    is none or it cannot be read as a report (a metric then says nothing, never a wrong figure)."""
    from ..common.inputs import InputError
    from ..stages.status import read_start_report

    if not isinstance(report_dir, str) or not report_dir.startswith("/"):
        return None
    try:
        report = read_start_report(root.path(report_dir))
    except (InputError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def health_files(root, report_dir: Any) -> tuple[list[float] | None, dict | None]:
    """The health watch's restart times and latest report under report_dir (None for each that
    is missing or unreadable)."""
    import json

    from ..vllm.health_watch import LATEST, read_restarts

    if not isinstance(report_dir, str) or not report_dir.startswith("/"):
        return None, None
    try:
        latest = json.loads(root.path(f"{report_dir}/{LATEST}").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        latest = None
    return read_restarts(root.path(report_dir)), latest if isinstance(latest, dict) else None
