"""A table of settings, each declared once (name, type, default, bounds, where it goes, what it
means), and the type, range and shape checks every table shares.

A role's settings table (arcops.vllm.settings, arcops.llama.server_settings) is read by its
renderer, which checks values through Table.typed, and by `scripts/role-docs`, which writes the
role's defaults, argument specs and settings mapping from it (arcops.devtools.settings_blocks).

Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

_TYPE_TEXT = {
    "str": "a non-empty string",
    "path": "an absolute path",
    "bool": "true or false",
    "int": "an integer",
    "number": "a number",
    "secret": "a string or a boolean",
    "str_list": "a list of strings",
    "int_list": "a list of integers",
    "number_list": "a list of numbers",
    "str_dict": "a mapping of strings to strings (quote numbers and booleans)",
}
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Shape:
    """What a text value (or each item of a list) must look like beyond its type: TEXT states it
    in the argument specs; PROBLEM says what is wrong with one value ("is absolute: ..."), or
    None. Messages put the setting's name and the value before it."""

    text: str
    problem: Callable[[str], str | None]


@dataclass(frozen=True)
class Setting:
    """One setting. kind: one of _TYPE_TEXT's (secret: only its truthiness reaches the renderer).
    low/high bound a number (inclusive); shape: what a text (each item of a list) must look
    like; hint says what the number is, after a range problem;
    no_log hides the values (they may be secrets) wherever Ansible would show them. flag: the
    program's flag the value goes to (a bool: the flag alone, when true); env: the variable it
    sets. required: the role's empty string means "not set" (the renderer says when it must be).
    role_default: the role's default when it is a template over another variable (the table's
    default is then what that template gives alone)."""

    name: str
    kind: str
    default: object
    doc: tuple[str, ...]
    nullable: bool = False
    required: bool = False
    low: float | None = None
    high: float | None = None
    hint: str = ""
    no_log: bool = False
    flag: str = ""
    env: str = ""
    choices: tuple[str, ...] = ()
    role_default: object = None
    shape: Shape | None = None


def setting(name: str, kind: str, default: object, *doc: str, **more: object) -> Setting:
    """A row, its documentation as the sentences after the default."""
    return Setting(name, kind, default, doc, **more)  # type: ignore[arg-type]


def is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def clean_text(v: str) -> bool:
    """No control character (one line in an env file, a unit, a log) and valid UTF-8."""
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not _CONTROL_RE.search(v)


def type_ok(kind: str, v: object) -> bool:
    if kind in ("str", "path"):
        return isinstance(v, str) and v != ""
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "int":
        return is_int(v)
    if kind == "number":
        return is_int(v) or (isinstance(v, float) and math.isfinite(v))
    if kind == "secret":
        return isinstance(v, (str, bool))
    if kind == "str_list":
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
    if kind == "int_list":
        return isinstance(v, list) and all(is_int(x) for x in v)
    if kind == "number_list":
        return isinstance(v, list) and all(type_ok("number", x) for x in v)
    if kind == "str_dict":
        return isinstance(v, dict) and all(isinstance(a, str) and isinstance(b, str) for a, b in v.items())
    raise ValueError(f"unknown setting kind {kind}")


def type_name(v: object) -> str:
    """What a value is, in words, never the value itself (it may be a secret)."""
    if isinstance(v, list):
        return "a list with " + ", ".join(sorted({type(x).__name__ for x in v})) + " items"
    if isinstance(v, dict):
        return "a mapping with " + ", ".join(sorted({type(x).__name__ for x in v.values()})) + " values"
    if v == "":
        return "an empty string"
    return "null" if v is None else type(v).__name__


def role_default(s: Setting) -> object:
    """The setting's default as the role states it."""
    return s.default if s.role_default is None else s.role_default


def _number(v: float) -> str:
    """A bound as people write it: 1048576, not 1.04858e+06; 0.05 as it is."""
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def bounds_text(s: Setting) -> str:
    """The allowed range in words, for messages and the argument specs."""
    if s.low is None and s.high is None:
        return ""
    if s.high is None:
        return f"{_number(s.low)} or more"  # type: ignore[arg-type]
    if s.low is None:
        return f"at most {_number(s.high)}"
    return f"from {_number(s.low)} to {_number(s.high)}"


def in_bounds(s: Setting, value: float) -> bool:
    return (s.low is None or value >= s.low) and (s.high is None or value <= s.high)


class Table:
    """A role's settings: PREFIX is the role variables' prefix, PROGRAM the program whose flags
    they set (for the documentation). LABELLED: messages name the role variable (prefix and
    name) rather than the bare setting name."""

    def __init__(self, prefix: str, program: str, settings: tuple[Setting, ...], labelled: bool = False):
        self.prefix, self.program, self.settings, self.labelled = prefix, program, settings, labelled
        self.by_name = {s.name: s for s in settings}
        self.defaults: dict[str, object] = {s.name: s.default for s in settings}
        self.required = tuple(s.name for s in settings if s.required)

    def label(self, name: str) -> str:
        return self.prefix + name if self.labelled else name

    def where(self, s: Setting) -> str:
        """Where the setting goes, in words, for the documentation."""
        if s.flag:
            off = " Null leaves the flag out." if s.nullable else ""
            return f"{self.program}'s C({s.flag})" + (" when true." if s.kind == "bool" else "." + off)
        return f"Sets C({s.env}) in the container." if s.env else ""

    def from_role_vars(self, role_vars: dict) -> dict:
        """The settings among role variables, prefix stripped; the role's other variables are not."""
        n = len(self.prefix)
        return {
            k[n:]: v
            for k, v in role_vars.items()
            if isinstance(k, str) and k.startswith(self.prefix) and k[n:] in self.by_name
        }

    def unknown(self, key: object) -> str:
        bare = key[len(self.prefix) :] if isinstance(key, str) and key.startswith(self.prefix) else None
        if bare in self.by_name and not self.labelled:
            return f"unknown setting '{key}': settings have no {self.prefix} prefix, use '{bare}'"
        close = difflib.get_close_matches(str(key), list(self.by_name), n=1)
        return f"unknown setting '{key}'" + (f": did you mean '{close[0]}'?" if close else ": remove it")

    def shape_problem(self, name: str, v: object) -> str | None:
        """Range, choice and text shape of a value of the right type."""
        s, label = self.by_name[name], self.label(name)
        if s.kind in ("int", "number") and not in_bounds(s, v):  # type: ignore[arg-type]
            return f"{label} {v} must be {bounds_text(s)}" + (f" ({s.hint})" if s.hint else "")
        if s.kind == "number_list" and not all(in_bounds(s, x) for x in v):  # type: ignore[union-attr]
            return f"{label}: every item must be {bounds_text(s)}" + (f" ({s.hint})" if s.hint else "")
        if s.choices and v not in s.choices:
            return f"unknown {label} '{v}': use one of {', '.join(s.choices)}"
        texts = [v] if s.kind in ("str", "path") else (v if s.kind == "str_list" else [])
        if not all(clean_text(t) for t in texts):  # type: ignore[union-attr]
            return f"{label} holds a control character or text that is not UTF-8: one plain line each"
        if s.kind == "path" and not v.startswith("/"):  # type: ignore[union-attr]
            return f"{label} '{v}' is not an absolute path: give the full host path"
        for text in texts if s.shape else ():
            problem = s.shape.problem(text)  # type: ignore[union-attr]
            if problem:
                return f"{label}{' entry' if s.kind == 'str_list' else ''} '{text}' {problem}"
        return None

    def typed(self, values: object, problems: list[str]) -> tuple[dict, set[str]]:
        """VALUES merged over the defaults, and the names of those of the wrong type or shape
        (reported in PROBLEMS, then defaulted so the later checks still run). A required
        setting's empty string is None: not set."""
        if not isinstance(values, dict):
            problems.append(
                f"settings must be a mapping of setting names to values, not {type(values).__name__}"
            )
            values = {}
        problems += [self.unknown(key) for key in values if key not in self.by_name]
        out = {k: values.get(k, v) for k, v in self.defaults.items()}
        bad = set()
        for s in self.settings:
            v = out[s.name]
            if s.required and v == "":
                out[s.name] = v = None  # the role's way of saying "set me"
            if v is None and (s.nullable or s.required):
                continue
            if not type_ok(s.kind, v):
                # Never the value itself: it may be a key or a secret in extra settings.
                null = " or null (leaves the flag out)" if s.flag else " or null"
                what = _TYPE_TEXT[s.kind] + (null if s.nullable else "")
                problem = f"{self.label(s.name)} must be {what}, not {type_name(v)}"
            else:
                problem = None if s.kind == "secret" else self.shape_problem(s.name, v)
            if problem:
                problems.append(problem)
                out[s.name] = self.defaults[s.name]
                bad.add(s.name)
        return out, bad
