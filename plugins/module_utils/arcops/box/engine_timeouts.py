"""xe's job timeouts per engine class, as sysfs shows them under each GPU:
<device>/tile<T>/gt<G>/engines/<class>/job_timeout_ms (and _min, _max), the driver's defaults
under .defaults/ beside them (drivers/gpu/drm/xe/xe_hw_engine_class_sysfs.c). A job that runs
longer than job_timeout_ms is reset; job_timeout_max is capped by the kernel's build-time
maximum (10 s unless CONFIG_DRM_XE_JOB_TIMEOUT_MAX says otherwise), so a long prefill on a compute
engine can outlast any timeout the box allows.

Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

import re

from ..common.sysroot import SysRoot, parse_int

ATTRS = ("job_timeout_ms", "job_timeout_min", "job_timeout_max")
_TILE, _GT = re.compile(r"tile[0-9]{1,2}"), re.compile(r"gt[0-9]{1,2}")
# Engine classes as xe names them: render, copy, compute, video decode, video enhance.
CLASSES = ("rcs", "bcs", "ccs", "vcs", "vecs")


def read(sysroot: SysRoot, device: str) -> dict[str, dict]:
    """{class: {job_timeout_ms, job_timeout_min, job_timeout_max, default_job_timeout_ms,
    default_job_timeout_max (the kernel's cap), gts}} for each engine class of DEVICE (its sysfs
    folder), read from the first GT that has the class (gts lists every one); values None where
    unreadable, {} when the driver shows no engines (not xe, or a kernel before these files)."""
    found: dict[str, dict] = {}
    for tile in sorted(t for t in sysroot.listdir(device) if _TILE.fullmatch(t)):
        for gt in sorted(g for g in sysroot.listdir(f"{device}/{tile}") if _GT.fullmatch(g)):
            engines = f"{device}/{tile}/{gt}/engines"
            for name in sysroot.listdir(engines):
                if name not in CLASSES:
                    continue
                if name in found:
                    found[name]["gts"].append(f"{tile}/{gt}")
                    continue
                values = {a: parse_int(sysroot.read(f"{engines}/{name}/{a}")) for a in ATTRS}
                for attr in ("job_timeout_ms", "job_timeout_max"):
                    values[f"default_{attr}"] = parse_int(sysroot.read(f"{engines}/{name}/.defaults/{attr}"))
                found[name] = {**values, "gts": [f"{tile}/{gt}"]}
    return dict(sorted(found.items()))
