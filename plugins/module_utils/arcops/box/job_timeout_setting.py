"""arcops_xe_job_timeout_ms: xe's job timeout per engine class, set on every Arc GPU on xe.

xe resets a job that runs longer than its engine class's job_timeout_ms (engine_timeouts.py reads
them). The value is sysfs state: the driver's default comes back at every boot and every rebind.
So the setting is written twice: now, to the running driver, and as a udev rule that writes it
again whenever an xe device binds (at boot, before any service starts). An exec queue takes its
timeout when it is created, so a service already running keeps the old one until it restarts.

The kernel refuses a value above the class's job_timeout_max, itself capped by the kernel's
build-time maximum (CONFIG_DRM_XE_JOB_TIMEOUT_MAX, 10 s unless built otherwise, shown under
.defaults/job_timeout_max). A job that needs longer cannot run on that kernel whatever is set:
such a value is refused here with that reason and what to do instead (shorter jobs), before
anything is written.

Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

from typing import Any

from ..common.sysroot import SysRoot
from . import engine_timeouts
from .gpus import scan
from .pcie import PCI_DEVICES

VARIABLE = "arcops_xe_job_timeout_ms"
RULE_PATH = "/etc/udev/rules.d/71-arcops-xe-job-timeout.rules"
# Where each class lives on Battlemage (one tile: the primary GT runs render, copy and compute,
# the media GT video): the rule's paths before xe has bound a card on this box (a first run on
# a stock kernel). Paths found on the box's cards are added to these.
LAYOUT = {
    "rcs": ("tile0/gt0",),
    "bcs": ("tile0/gt0",),
    "ccs": ("tile0/gt0",),
    "vcs": ("tile0/gt1",),
    "vecs": ("tile0/gt1",),
}
# The rule's match: every xe PCI device as it is added (coldplug at boot) or bound to xe.
MATCH = 'ACTION=="add|bind", SUBSYSTEM=="pci", DRIVER=="xe"'
# A day: far above any kernel's cap; bounds the number before the box is asked.
MOST_MS = 86_400_000
ADVICE = (
    "a job that needs longer is reset whatever is set: make the jobs shorter (fewer tokens per "
    "step: vllm_service_max_num_batched_tokens, llama.cpp's --ubatch-size) or boot a kernel "
    "built with a higher CONFIG_DRM_XE_JOB_TIMEOUT_MAX"
)


class SettingError(ValueError):
    """A wanted value that is not a timeout arcops can set."""


def parse_wanted(value: Any, name: str = VARIABLE) -> dict[str, int]:
    """{class: ms} from the variable: engine classes xe names, whole milliseconds 1..MOST_MS."""
    if value is None or value == {}:
        return {}
    if not isinstance(value, dict):
        got = type(value).__name__
        raise SettingError(f"{name}: must be a mapping of engine class to milliseconds, got {got}")
    wanted = {}
    for cls, ms in value.items():
        if cls not in engine_timeouts.CLASSES:
            known = ", ".join(engine_timeouts.CLASSES)
            raise SettingError(f"{name}: {str(cls)[:40]!r} is not an engine class xe has ({known})")
        if isinstance(ms, str) and ms.isascii() and ms.isdigit() and len(ms) <= 9:
            ms = int(ms)  # a value given on the command line (-e) arrives as text
        if isinstance(ms, bool) or not isinstance(ms, int) or not 1 <= ms <= MOST_MS:
            got = repr(ms)[:40]
            raise SettingError(f"{name}.{cls}: must be whole milliseconds from 1 to {MOST_MS}, got {got}")
        wanted[cls] = ms
    return dict(sorted(wanted.items()))


def xe_gpus(gpus: list[dict]) -> list[dict]:
    """The Arc GPUs on xe among the facts' GPUs."""
    return [g for g in gpus if g.get("model") and g.get("driver") == "xe"]


def cap(timeouts: dict) -> int | None:
    """The kernel's build-time cap for a class (its default job_timeout_max), else its current max."""
    found = timeouts.get("default_job_timeout_max")
    return found if found is not None else timeouts.get("job_timeout_max")


def problems(gpus: list[dict], wanted: dict[str, int]) -> list[str]:
    """Why WANTED cannot be set on these GPUs (a missing class, a value outside its range)."""
    found = []
    for gpu in xe_gpus(gpus):
        timeouts, address = gpu.get("job_timeouts") or {}, gpu.get("address")
        for cls, ms in wanted.items():
            have = timeouts.get(cls)
            if not have:
                has = ", ".join(timeouts) or "none"
                found.append(f"{VARIABLE}.{cls}: {address} has no {cls} engine (it has {has})")
                continue
            top, low = cap(have), have.get("job_timeout_min")
            if top is not None and ms > top:
                found.append(
                    f"{VARIABLE}.{cls}: {ms} ms is above the kernel's cap of {top} ms on {address}: {ADVICE}"
                )
            elif low is not None and ms < low:
                found.append(f"{VARIABLE}.{cls}: {ms} ms is below {address}'s job_timeout_min of {low} ms")
    return found


def writes(gpus: list[dict], wanted: dict[str, int]) -> list[tuple[str, int]]:
    """(sysfs path, value) to write, in order, for the running driver to have WANTED: a lowered
    job_timeout_max is raised first (the kernel checks job_timeout_ms against it)."""
    out = []
    for gpu in xe_gpus(gpus):
        device = f"{PCI_DEVICES}/{gpu.get('address')}"
        for cls, ms in wanted.items():
            have = (gpu.get("job_timeouts") or {}).get(cls) or {}
            for gt in have.get("gts") or ():
                engines = f"{device}/{gt}/engines/{cls}"
                if (have.get("job_timeout_max") or 0) < ms:
                    out.append((f"{engines}/job_timeout_max", ms))
                if have.get("job_timeout_ms") != ms:
                    out.append((f"{engines}/job_timeout_ms", ms))
    return out


def mismatches(gpus: list[dict], wanted: dict[str, int]) -> list[str]:
    """Where the running driver's timeouts differ from WANTED, with the kernel's cap when the
    value is above it (after a boot: the udev rule did not set it, or the kernel refused it)."""
    found = []
    for gpu in xe_gpus(gpus):
        timeouts = gpu.get("job_timeouts") or {}
        for cls, ms in wanted.items():
            have = timeouts.get(cls) or {}
            now = have.get("job_timeout_ms")
            if now != ms:
                top = cap(have)
                why = f" (above the kernel's cap of {top} ms)" if top is not None and ms > top else ""
                card = gpu.get("address")
                found.append(f"{card} {cls}: job_timeout_ms is {now}, {VARIABLE} wants {ms}{why}")
    return found


def rule(gpus: list[dict], wanted: dict[str, int]) -> str:
    """The udev rule that writes WANTED whenever an xe device binds ('' when nothing is wanted)."""
    if not wanted:
        return ""
    lines = [
        f"# Written by arcops from {VARIABLE}; edits are overwritten. xe's job timeout per engine",
        "# class, written whenever an xe device binds (sysfs forgets it at every boot).",
    ]
    for cls, ms in wanted.items():
        gts = set(LAYOUT[cls])
        for gpu in xe_gpus(gpus):
            gts.update(((gpu.get("job_timeouts") or {}).get(cls) or {}).get("gts") or ())
        for gt in sorted(gts):
            lines.append(f'{MATCH}, ATTR{{{gt}/engines/{cls}/job_timeout_ms}}="{ms}"')
    return "\n".join(lines) + "\n"


def apply(sysroot: SysRoot, planned: list[tuple[str, int]]) -> None:
    """Write each (path, value) under SYSROOT; a write the kernel refuses (EINVAL) names the file."""
    for path, value in planned:
        try:
            with open(sysroot.path(path), "w", encoding="ascii") as f:
                f.write(f"{value}\n")
        except OSError as e:
            raise SettingError(f"{path}: {value} was not taken ({e.strerror or e})") from e


def converge(sysroot: SysRoot, value: Any, state: str, check_mode: bool) -> dict:
    """One call for the module. STATE checked: the values fit every card (nothing written);
    present: also write them to the running driver and return the udev rule; verified: the
    running driver has them (after a boot). Raises SettingError with every reason."""
    wanted = parse_wanted(value)
    gpus = [g.as_dict() for g in scan(sysroot)]
    if state == "verified":
        wrong = mismatches(gpus, wanted)
        if wrong:
            raise SettingError("; ".join(wrong) + f" (the udev rule {RULE_PATH} writes them at boot)")
        return {"changed": False, "writes": [], "rule": rule(gpus, wanted)}
    found = problems(gpus, wanted)
    if found:
        raise SettingError("; ".join(found))
    planned = writes(gpus, wanted) if state == "present" else []
    if planned and not check_mode:
        apply(sysroot, planned)
    return {"changed": bool(planned), "writes": [write[0] for write in planned], "rule": rule(gpus, wanted)}
