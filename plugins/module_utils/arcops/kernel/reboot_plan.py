"""Whether a box must reboot for its pinned stack, and why: the decision intel_stack takes after
installing, in one place under pytest.

A reboot is for one of two things: the pinned kernel is installed and should run but another
runs (then the box boots it once, a trial: GRUB's default moves only after it verified), or the
pinned GuC is installed but an xe GPU still runs another (firmware loads at boot; a plain reboot
into the same kernel). The reasons are said in words, for the reboot message and check mode.

Stdlib only: it runs inside the arcops_reboot_plan module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RebootPlan:
    reasons: tuple[str, ...]
    trial: bool  # the reboot boots a new kernel once (kernel_boot's trial), not a plain reboot

    def as_dict(self) -> dict[str, Any]:
        return {"reasons": list(self.reasons), "trial": self.trial, "reboot": bool(self.reasons)}


def stale_guc(gpus: Any, pinned: str) -> list[str]:
    """Addresses of xe GPUs whose loaded GuC is known and is not PINNED (a GPU whose GuC could not
    be read says nothing, and is no reason to reboot)."""
    if not isinstance(gpus, list):
        raise ValueError(f"gpus: must be a list of the facts' GPUs, got {type(gpus).__name__}")
    out = []
    for gpu in gpus:
        if not isinstance(gpu, dict):
            raise ValueError(f"gpus: each GPU must be a mapping, got {type(gpu).__name__}")
        loaded = gpu.get("guc_loaded")
        if gpu.get("driver") == "xe" and loaded is not None and loaded != pinned:
            out.append(str(gpu.get("address")))
    return out


def plan(running: str, kernel: str | None, guc: str | None, gpus: Any) -> RebootPlan:
    """RUNNING: the kernel that runs. KERNEL: the pinned kernel this run installs and boots (None:
    it installs or boots none). GUC: the pinned GuC this run installs (None: no firmware)."""
    reasons = []
    trial = kernel is not None and running != kernel
    if trial:
        reasons.append(f"running kernel {running}, pinned {kernel}")
    stale = stale_guc(gpus, guc) if guc is not None else []
    if stale:
        reasons.append(f"GuC {guc} not yet loaded on {', '.join(stale)}")
    return RebootPlan(tuple(reasons), trial)
