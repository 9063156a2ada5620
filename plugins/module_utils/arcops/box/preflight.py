"""Preflight: is this box fit for arcops? Every problem and warning at once, with what to do.

The preflight role reads the box and judges it in one module call (arcops_preflight): the
operating system and the remote user come from the real root, the hardware (GPUs, PCIe links,
memory, Secure Boot, free disk) from ``facts.collect`` under the configured root (a fixture
tree in the lab). Problems fail the run; warnings are only reported. The record a passing box
gets is the local fact ``ansible_local.arcops`` (in arcops.common.records' one shape) that later
stages and the status read.

Stdlib only: it runs on the box inside the arcops_preflight module.
"""

from __future__ import annotations

import os
import pwd
import re
from dataclasses import dataclass, field, fields
from typing import Any, get_origin, get_type_hints

from ..common.sysroot import SysRoot
from . import firmware_requests, ram_rule
from .host import os_release

# os-release ID -> the distribution name Ansible reports (and the settings use).
DISTRIBUTIONS = {"ubuntu": "Ubuntu", "debian": "Debian"}
_DEBIAN_POINT_RELEASE = re.compile(r"[0-9]+(\.[0-9]+)?")
_URL = re.compile(r"^[a-z]+://")


@dataclass(frozen=True)
class Settings:
    """What the role's variables ask of the box (roles/preflight/defaults/main.yml)."""

    supported_os: list[dict] = field(default_factory=list)
    lab_os: list[dict] = field(default_factory=list)
    lab_mode: bool = False
    gpu_count: int = 2
    gpu_allowed_ids: list[str] = field(default_factory=list)
    gpu_driver: str = "xe"
    min_link_width: int = 8
    vllm_profile: str = "graph_mtp"
    ram_required_gib: dict = field(default_factory=dict)
    ram_visible_factor: float = ram_rule.VISIBLE_FACTOR
    allow_low_ram: bool = False
    disk_requirements: list[dict] = field(default_factory=list)
    unsigned_kernel: bool = False
    bundle: str = ""
    bundle_on_controller: bool = True

    @classmethod
    def from_mapping(cls, values: dict) -> Settings:
        """From the module's settings option; an unknown name or a wrong type is refused by name."""
        hints = get_type_hints(cls)
        known = {f.name: get_origin(hints[f.name]) or hints[f.name] for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"settings.{unknown[0]}: not a preflight setting (known: {', '.join(known)})")
        out = {}
        for name, value in values.items():
            kind = known[name]
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(
                    f"settings.{name}: must be of type {kind.__name__}, got {type(value).__name__}"
                )
            out[name] = value
        for name, item_ok, want in _ITEMS:
            items = out.get(name, [])
            for key, item in items.items() if isinstance(items, dict) else enumerate(items):
                if not item_ok(item):
                    raise ValueError(f"settings.{name}[{key!r}]: must be {want}")
        return cls(**out)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _os_pair(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(value.get(k), str) for k in ("distribution", "version"))


def _disk(value: Any) -> bool:
    path = value.get("path") if isinstance(value, dict) else None
    return (
        isinstance(path, str) and path.startswith("/") and "\0" not in path and _is_number(value.get("gib"))
    )


# Settings whose items have a shape of their own: (name, check, what it must be).
_ITEMS = (
    ("supported_os", _os_pair, "a mapping with distribution and version (strings)"),
    ("lab_os", _os_pair, "a mapping with distribution and version (strings)"),
    ("gpu_allowed_ids", lambda v: isinstance(v, str), "a PCI device ID (a string)"),
    ("ram_required_gib", _is_number, "a number of GiB"),
    ("disk_requirements", _disk, "a mapping with path (absolute) and gib (a number)"),
)


@dataclass(frozen=True)
class Platform:
    """What Ansible's minimal facts would say: distribution, version, kernel, remote user."""

    distribution: str
    version: str
    major_version: str
    kernel: str
    user_id: str
    user_uid: int

    def as_facts(self) -> dict:
        return {
            "distribution": self.distribution,
            "distribution_version": self.version,
            "distribution_major_version": self.major_version,
            "kernel": self.kernel,
            "user_id": self.user_id,
            "user_uid": self.user_uid,
        }


def read_platform(root: SysRoot | None = None) -> Platform:
    """The real box's OS release (Debian's point release from /etc/debian_version, as Ansible
    reports it), running kernel and effective user."""
    root = root or SysRoot("/")
    rel = os_release(root)
    os_id = rel.get("ID", "")
    name = DISTRIBUTIONS.get(os_id) or (rel.get("NAME", "").split() or ["unknown"])[0]
    version = rel.get("VERSION_ID", "")
    if os_id == "debian":
        point = root.read("/etc/debian_version") or ""
        if _DEBIAN_POINT_RELEASE.fullmatch(point) and point.split(".")[0] == version:
            version = point
    uid = os.geteuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return Platform(name, version, version.split(".")[0], os.uname().release, user, uid)


def allowed_gpus(facts: dict, settings: Settings) -> list[dict]:
    return [g for g in facts.get("gpus", []) if g.get("device_id") in settings.gpu_allowed_ids]


def _os_problems(platform: Platform, s: Settings) -> list[str]:
    supported = any(
        o.get("distribution") == platform.distribution and o.get("version") == platform.version
        for o in s.supported_os
    )
    lab_ok = s.lab_mode and any(
        o.get("distribution") == platform.distribution and o.get("version") == platform.major_version
        for o in s.lab_os
    )
    out = []
    if not (supported or lab_ok):
        targets = ", ".join(f"{o.get('distribution')} {o.get('version')}" for o in s.supported_os)
        tail = "." if s.lab_mode else ". Debian is accepted only in test labs (arcops_lab_mode=true)."
        out.append(
            f"{platform.distribution} {platform.version} is not supported: arcops targets {targets}{tail}"
        )
    if platform.user_uid != 0:
        out.append(
            f"arcops runs as {platform.user_id} (uid {platform.user_uid}) on the box and needs root: "
            "set ansible_become: true (and give the sudo password with -K if it needs one)."
        )
    return out


def _gpu_problems(facts: dict, gpus: list[dict], s: Settings) -> list[str]:
    out = []
    if len(gpus) < s.gpu_count:
        seen = ", ".join(f"{g.get('address')} {g.get('device_id')}" for g in facts.get("gpus", [])) or "none"
        out.append(
            f"Found {len(gpus)} supported GPU(s), need {s.gpu_count}. Intel display devices seen: {seen}. "
            "Check the cards are seated and powered, or add their PCI IDs to preflight_gpu_allowed_ids."
        )
    unbound = [g for g in gpus if g.get("driver") != s.gpu_driver]
    if s.gpu_driver and unbound:
        listed = ", ".join(f"{g.get('address')} driver={g.get('driver') or 'none'}" for g in unbound)
        out.append(
            f"GPU(s) not bound to {s.gpu_driver}: {listed}. Install the pinned stack (intel_stack role) "
            "and reboot, or check that no modprobe blacklist or xe.force_probe setting keeps xe off "
            "these devices."
        )
    return out


def gpu_warnings(gpus: list[dict], s: Settings) -> list[str]:
    """Slot links narrower than the minimum, links below the card, resizable BAR off, display."""
    out = []
    for g in gpus:
        width = (g.get("link") or {}).get("width")
        if isinstance(width, int) and width < s.min_link_width:
            out.append(
                f"{g['address']}: PCIe slot link narrower than x{s.min_link_width}; "
                "tensor-parallel all-reduce will be slower"
            )
    out += [
        f"{g['address']}: PCIe link runs below what the card supports (see arcops box gpus)"
        for g in gpus
        if (g.get("link") or {}).get("downgraded")
    ]
    out += [
        f"{g['address']}: resizable BAR looks off (256 MiB aperture); enable Above 4G decoding and "
        "Re-Size BAR in the firmware"
        for g in gpus
        if isinstance(g.get("bar2_mib"), int) and g["bar2_mib"] <= 256
    ]
    out += [
        f"{g['address']}: this Arc card drives the display; it shares its memory and engines with the desktop"
        for g in gpus
        if g.get("boot_vga")
    ]
    return out


def _host_problems(facts: dict, s: Settings) -> list[str]:
    out = []
    visible = (facts.get("host") or {}).get("mem_total_gib")
    short = ram_rule.short_of(s.vllm_profile, visible, s.ram_required_gib or None, s.ram_visible_factor)
    if short and not s.allow_low_ram:
        out.append(
            f"Host RAM: {short}. Add RAM, choose arcops_vllm_profile=eager, or set "
            "arcops_allow_low_ram=true to accept the risk."
        )
    free = facts.get("free_gib") or {}
    for need in s.disk_requirements:
        have = free.get(need["path"])
        if have is not None and float(have) < float(need["gib"]):
            out.append(
                f"Disk: {need['path']} has {have} GiB free, needs {need['gib']} GiB for "
                f"{need.get('why') or 'arcops'}."
            )
    if s.unsigned_kernel and (facts.get("host") or {}).get("secure_boot"):
        out.append(
            "Secure Boot is on and an unsigned mainline kernel is planned (arcops_mainline_kernel is set): "
            "it would not boot. Disable Secure Boot, or enrol a MOK that signs the kernel, or keep the "
            "signed Intel kernel."
        )
    if s.bundle and not _URL.match(s.bundle) and not s.bundle_on_controller:
        out.append(
            f"Offline bundle {s.bundle} is not on the control node. "
            "Download Intel's installer tarball there, or point arcops_stack_bundle at a URL."
        )
    return out


def judge(platform: Platform, facts: dict, s: Settings) -> tuple[list[str], list[str]]:
    """(problems, warnings) in the order a reader fixes them: OS, user, GPUs, firmware, RAM, disk, boot."""
    gpus = allowed_gpus(facts, s)
    firmware, reboot = firmware_requests.problems(facts.get("firmware_missing") or [], platform.distribution)
    problems = _os_problems(platform, s) + _gpu_problems(facts, gpus, s) + firmware + _host_problems(facts, s)
    return problems, gpu_warnings(gpus, s) + reboot


def record(platform: Platform, facts: dict, s: Settings, warnings: list[str]) -> dict[str, Any]:
    """The local fact a passing box gets: deterministic (no free-disk figures, no time), so an
    unchanged box rewrites nothing."""
    return {
        "simulated_hardware": facts.get("simulated"),
        "os": f"{platform.distribution} {platform.version}",
        "host": facts.get("host"),
        "vllm_profile": s.vllm_profile,
        "gpus": allowed_gpus(facts, s),
        "display_gpu": facts.get("display_gpu"),
        "warnings": warnings,
    }
