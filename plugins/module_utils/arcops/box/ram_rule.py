"""How much host RAM a box needs for the vLLM profile it runs: the one home of the rule that
preflight judges a box by and the vLLM spec refuses settings by (docs/field-knowledge.md).

Graph capture costs about 9 GiB per card: with 32 GB installed one graph_mtp start in four hung
with copy-engine resets, with 64 GB none in 45 starts. MemTotal reads below the RAM installed
(firmware and kernel reservations: 64 GB shows about 62.7 GiB), so a box passes when MemTotal is
at least the requirement times VISIBLE_FACTOR.
Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

# Installed RAM (GiB) per vLLM profile; none: a box that runs no vLLM.
REQUIRED_GIB = {"graph_mtp": 64, "compiled": 32, "eager": 32, "none": 16}
VISIBLE_FACTOR = 0.94
HANGS = "with 32 GB one graph_mtp start in four hung with copy-engine resets"


def short_of(
    profile: str,
    mem_total_gib: float | None,
    required: dict | None = None,
    factor: float | None = None,
) -> str | None:
    """Why MEM_TOTAL_GIB is too little for PROFILE, or None when it is enough (or the profile
    has no requirement). REQUIRED and FACTOR override the measured figures (a role's settings)."""
    need = (required or REQUIRED_GIB).get(profile)
    factor = VISIBLE_FACTOR if factor is None else factor
    if need is None:
        return None
    if mem_total_gib is not None and float(mem_total_gib) >= float(need) * factor:
        return None
    seen = "unknown" if mem_total_gib is None else f"{float(mem_total_gib):.1f} GiB"
    return (
        f"MemTotal {seen}, profile {profile} needs {need} GB installed "
        f"(MemTotal {float(need) * factor:g} GiB or more); {HANGS}"
    )
