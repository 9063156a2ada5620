"""What a run changed (or, in check mode, would change) on each box, in the plan's words.

The arcops_changes callback (plugins/callback/arcops_changes.py) hands over every task that
reported changed: its box, its role and its name. kinds() sorts them into what a user plans
around (packages, firmware, kernel, image, spec, ...) by KINDS, the one table of which stage task
changes what; bookkeeping (records, seals, the rollout's own steps) is no change to the box's
stack and is left out. The dry run's list and the real run's are made the same way, so a plan
can be held against what the rollout then did.
"""

from __future__ import annotations

import re

# (role, task name pattern, kind): the first match wins. Roles not named here change nothing a
# plan shows (preflight reads; verify records a verdict; the rollout keeps its log).
KINDS: list[tuple[str, str, str]] = [
    ("intel_stack", r"Install the pinned packages: kernel", "kernel"),
    ("intel_stack", r"[Bb]undle", "bundle"),
    ("intel_stack", r"packages|[Hh]old|apt", "packages"),
    ("intel_stack", r"firmware|blob|divert|initramfs", "firmware"),
    ("intel_stack", r"GRUB|grub|boot", "kernel"),
    ("mainline_kernel", r".", "kernel"),
    ("kernel_boot", r".", "kernel"),
    ("arcops_helpers", r"[Mm]etrics", "metrics"),
    ("arcops_helpers", r".", "arcops helpers"),
    ("llama_cpp_sycl", r"helpers", "arcops helpers"),
    ("llama_cpp_sycl", r"oneAPI|oneapi", "oneapi"),
    ("llama_cpp_sycl", r"[Bb]uild|[Cc]lone|source|[Aa]ctivate|current", "llama.cpp build"),
    ("llama_cpp_sycl", r"server|unit", "llama-server"),
    ("vllm_service", r"helpers", "arcops helpers"),
    ("vllm_service", r"[Ii]mage|[Ll]oad|[Pp]ull", "image"),
    ("vllm_service", r"[Cc]ontainer|spec|[Uu]nit|[Ww]atchdog|[Rr]estart|[Ss]tart", "spec"),
    ("vllm_service", r"[Ee]ngine|[Dd]ocker", "engine"),
    ("safe_reboot", r"[Rr]eboot", "reboot"),
]
# Tasks that keep a record of what was done, never a change of what runs.
BOOKKEEPING = re.compile(r"^(Record|Keep|Seal|Remove the stage's seal|Create the spec folder|Publish)")
IGNORED_ROLES = {"preflight", "verify", "stage_seal", "apt_packages_cache"}


def kind(role: str | None, task: str) -> str | None:
    """The kind of change a changed task makes, or None for bookkeeping and other roles."""
    if not role or role in IGNORED_ROLES or BOOKKEEPING.match(task):
        return None
    for r, pattern, k in KINDS:
        if r == role and re.search(pattern, task):
            return k
    return f"{role} (other)" if role in {r for r, _unused, _unused in KINDS} else None


def by_box(changed: list[dict]) -> dict[str, dict]:
    """{box: {kinds: sorted, tasks: ["role: task", ...]}} from the callback's changed tasks
    ({host, role, task}); a box with nothing but bookkeeping has no entry."""
    out: dict[str, dict] = {}
    for c in changed:
        k = kind(c.get("role"), c.get("task") or "")
        if k is None:
            continue
        box = out.setdefault(c["host"], {"kinds": [], "tasks": []})
        if k not in box["kinds"]:
            box["kinds"].append(k)
        label = f"{c['role']}: {c['task']}"
        if label not in box["tasks"]:
            box["tasks"].append(label)
    for box in out.values():
        box["kinds"].sort()
    return out
