"""Stacks seen to fail, and seen fine, with their evidence (known_stacks.yml beside this file,
plus a user's own in the inventory): which entries a stack release matches, and which of those
refuse it.

An entry's `match` keys are facts of a release (FACTS below); every key must match, with
shell-style patterns (a list of patterns: any of them). An entry may say its `workaround`. A bad
match refuses the release unless its known_bad_overrides names the entry; a fine match is shown,
never refuses. Parsed data in, no I/O: the adapters load the YAML.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from typing import Any

PROJECT_FILE = os.path.join(os.path.dirname(__file__), "known_stacks.yml")
USER_FILE = "known_stacks.yml"  # in the inventory, beside stack.yml
FORMAT = 1
VERDICTS = ("bad", "fine")
FACTS = ("image", "kernel", "guc", "mainline_kernel", "compute_runtime", "igc")
PREFIXED = ("env.", "setting.")
# The bundle lock's packages that carry the compute runtime's and the compiler's versions.
LOCK_PACKAGES = {"compute_runtime": ("libze-intel-gpu1", "intel-opencl-icd"), "igc": ("libigc2", "libigc1")}


_PLAIN_NAME = re.compile(r"[\w.-]{1,80}")


class KnownStacksError(ValueError):
    """An entries file that cannot be used: the message names the file and the entry."""


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def check(data: Any, where: str) -> list[dict]:
    """The entries of one file, or KnownStacksError naming every problem."""
    problems = []
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("entries"), list)
    ):
        raise KnownStacksError(f"{where}: must be a mapping with format: {FORMAT} and a list of entries")
    entries = []
    for n, entry in enumerate(data["entries"]):
        label = f"{where}: entries[{n}]"
        if not isinstance(entry, dict):
            problems.append(f"{label}: must be a mapping")
            continue
        name = entry.get("name")
        if isinstance(name, str) and name:
            label = f"{where}: {name if _PLAIN_NAME.fullmatch(name) else _json(name)}"
        unknown = sorted(
            map(_json, set(entry) - {"name", "verdict", "match", "evidence", "source", "workaround"})
        )
        if unknown:
            problems.append(f"{label}: unknown key(s) {', '.join(unknown)}")
        if not (isinstance(name, str) and _PLAIN_NAME.fullmatch(name)):
            problems.append(f"{label}: name must be letters, digits and . _ - (one word)")
        if entry.get("verdict") not in VERDICTS:
            problems.append(f"{label}: verdict must be bad or fine (got {_json(entry.get('verdict'))})")
        if not (isinstance(entry.get("evidence"), str) and entry["evidence"].strip()):
            problems.append(f"{label}: evidence must say what was seen")
        if "workaround" in entry and not (
            isinstance(entry["workaround"], str) and entry["workaround"].strip()
        ):
            problems.append(f"{label}: workaround must say what to do (or be left out)")
        match = entry.get("match")
        if not (isinstance(match, dict) and match):
            problems.append(f"{label}: match must be a mapping of facts to patterns")
        else:
            for key, pattern in match.items():
                if not (key in FACTS or (isinstance(key, str) and key.startswith(PREFIXED) and len(key) > 6)):
                    known = ", ".join([*FACTS, "env.NAME", "setting.NAME"])
                    problems.append(f"{label}: match key {_json(key)} is not one of {known}")
                listed = pattern if isinstance(pattern, list) and pattern else [pattern]
                if not all(isinstance(p, str | int | float) and not isinstance(p, bool) for p in listed):
                    problems.append(
                        f"{label}: match {_json(key)}: the pattern must be text or a list of texts"
                    )
        entries.append(entry)
    names = [e.get("name") for e in entries]
    problems += [
        f"{where}: entry {name} is listed twice" for name in sorted({n for n in names if names.count(n) > 1})
    ]
    if problems:
        raise KnownStacksError("\n".join(problems))
    return entries


def _lock_version(lock: dict | None, names: tuple[str, ...]) -> str | None:
    for name in names:
        for package in (lock or {}).get("packages", []):
            if isinstance(package, dict) and package.get("name") == name:
                return str(package.get("version"))
    return None


def facts(release: dict, lock: dict | None = None) -> dict[str, str]:
    """What entries match against, from a release (its parsed file) and its bundle's lock."""
    stack = release.get("intel_stack") or {}
    vllm = release.get("vllm") or {}
    settings = vllm.get("settings") or {}
    out = {
        "image": vllm.get("image"),
        "kernel": stack.get("kernel_release"),
        "guc": stack.get("guc_version"),
        "mainline_kernel": (release.get("mainline_kernel") or {}).get("release"),
        **{fact: _lock_version(lock, names) for fact, names in LOCK_PACKAGES.items()},
        **{f"env.{k}": v for k, v in (settings.get("extra_env") or {}).items()},
        **{f"setting.{k}": v for k, v in settings.items() if not isinstance(v, dict | list)},
    }
    return {k: str(v) for k, v in out.items() if v is not None}


def _matches(value: str, pattern: Any) -> bool:
    patterns = pattern if isinstance(pattern, list) else [pattern]
    return any(fnmatch.fnmatchcase(value, str(p)) for p in patterns)


def matches(found: dict[str, str], entries: list[dict]) -> list[dict]:
    """The entries whose every match key matches FOUND."""
    return [e for e in entries if all(k in found and _matches(found[k], p) for k, p in e["match"].items())]


def _workaround(entry: dict) -> str:
    text = entry.get("workaround")
    return f" Workaround: {' '.join(text.split())}" if isinstance(text, str) and text.strip() else ""


def refusals(matched: list[dict], overrides: list[str], entries: list[dict]) -> list[str]:
    """Why a release is refused: a bad match it does not override, an override of no entry."""
    known = {e["name"] for e in entries}
    out = [
        f"matches the known-bad stack {e['name']}: {' '.join(e['evidence'].split())} "
        f"(name it in known_bad_overrides to deploy it anyway){_workaround(e)}"
        for e in matched
        if e["verdict"] == "bad" and e["name"] not in overrides
    ]
    out += [f"known_bad_overrides: {name} is no known-bad entry" for name in overrides if name not in known]
    return out


def line_verdict(line: str) -> tuple[str, str] | None:
    """(name, state) of a line lines() wrote ("NAME (STATE): evidence"; STATE bad, fine or
    overridden), or None for any other text."""
    head = str(line).split(":", 1)[0]
    name, sep, state = head.partition(" (")
    return (name, state[:-1]) if sep and state.endswith(")") and name else None


def lines(matched: list[dict], overrides: list[str]) -> list[str]:
    """Each match as one line, for preflight's and the plan's output."""
    out = []
    for e in matched:
        state = "overridden" if e["verdict"] == "bad" and e["name"] in overrides else e["verdict"]
        out.append(f"{e['name']} ({state}): {' '.join(e['evidence'].split())}{_workaround(e)}")
    return out
