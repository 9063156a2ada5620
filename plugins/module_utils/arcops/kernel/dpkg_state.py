"""dpkg's diversions, holds and installed versions: read them, and plan the calls that bring a box
to what a role wants.

One call of the arcops_dpkg module replaces a loop of one dpkg-divert or dpkg_selections task
per path or package: each task is a round-trip to the box, paid again on every no-op run.

The calls are the ones community.general.dpkg_divert and ansible.builtin.dpkg_selections make,
so diversions and holds made by either are recognised and kept:
  divert   dpkg-divert --local --rename --divert PATH.distrib --add PATH
  undivert dpkg-divert --local --rename --remove PATH
  hold     dpkg --set-selections, "NAME hold" on stdin
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DIVERT_SUFFIX = ".distrib"

# "local diversion of /a to /a.distrib" or "diversion of /a to /a.real by some-package"
_DIVERSION_RE = re.compile(
    r"^(?P<local>local )?diversion of (?P<path>/.*?) to (?P<to>/.*?)(?: by (?P<by>\S+))?$"
)


@dataclass(frozen=True)
class Diversion:
    path: str
    to: str
    package: str | None  # None: a local diversion (the kind arcops makes)


@dataclass
class Plan:
    """The commands to run, in order, and what they change."""

    commands: list[list[str]] = field(default_factory=list)
    hold_input: str = ""  # stdin of `dpkg --set-selections`, empty when nothing is to be held
    diverted: list[str] = field(default_factory=list)
    undiverted: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.diverted or self.undiverted or self.held)


class DpkgStateError(ValueError):
    """A wanted state that arcops must not force (e.g. a path a package diverts)."""


def parse_diversions(text: str) -> dict[str, Diversion]:
    """`dpkg-divert --list` output by diverted path. Lines of another shape are ignored."""
    out = {}
    for line in text.splitlines():
        m = _DIVERSION_RE.match(line.strip())
        if m:
            package = None if m["local"] else m["by"]
            out[m["path"]] = Diversion(m["path"], m["to"], package)
    return out


def origin(paths: list[str], diversions: dict[str, Diversion]) -> list[str]:
    """For each path: "pinned" when a local diversion moved the distribution's file aside (the file
    there now is one arcops put in its place), else "distribution" (the packaged file, or none)."""
    _check_paths("origin", paths)
    return ["pinned" if p in diversions and diversions[p].package is None else "distribution" for p in paths]


def parse_selections(text: str) -> dict[str, str]:
    """`dpkg --get-selections` output: package name (architecture qualifier dropped) -> selection."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0].split(":", 1)[0]] = parts[1]
    return out


def _check_paths(name: str, paths: list[str]) -> None:
    for p in paths:
        if not isinstance(p, str) or not p.startswith("/") or "\n" in p or p != p.strip():
            raise DpkgStateError(f"{name}: {p!r} is not an absolute path")


def _check_names(names: list[str], option: str = "hold") -> None:
    for n in names:
        if not isinstance(n, str) or not re.fullmatch(r"[a-z0-9][a-z0-9+.-]*", n):
            raise DpkgStateError(f"{option}: {n!r} is not a Debian package name")


def plan(
    *,
    divert: list[str],
    undivert: list[str],
    hold: list[str],
    diversions: dict[str, Diversion],
    selections: dict[str, str],
) -> Plan:
    """What to run so that every path in DIVERT is diverted, every one in UNDIVERT is not, and
    every package in HOLD is held. Raises DpkgStateError before anything would run."""
    _check_paths("divert", divert)
    _check_paths("undivert", undivert)
    _check_names(hold)
    both = sorted(set(divert) & set(undivert))
    if both:
        raise DpkgStateError(f"divert and undivert both name {both[0]}")
    out = Plan()
    for path in dict.fromkeys(divert):
        have = diversions.get(path)
        if have is not None and have.package is not None:
            raise DpkgStateError(f"divert: {path} is already diverted by the package {have.package}")
        if have is None:
            out.commands.append(
                ["dpkg-divert", "--local", "--rename", "--divert", path + DIVERT_SUFFIX, "--add", path]
            )
            out.diverted.append(path)
    for path in dict.fromkeys(undivert):
        have = diversions.get(path)
        if have is not None and have.package is not None:
            raise DpkgStateError(f"undivert: {path} is diverted by the package {have.package}, not by arcops")
        if have is not None:
            out.commands.append(["dpkg-divert", "--local", "--rename", "--remove", path])
            out.undiverted.append(path)
    out.held = [n for n in dict.fromkeys(hold) if selections.get(n) != "hold"]
    if out.held:
        out.hold_input = "".join(f"{n} hold\n" for n in out.held)
        out.commands.append(["dpkg", "--set-selections"])
    return out


# `dpkg-query --show` with this format: one line per known package.
QUERY_FORMAT = "${Package}\t${Version}\t${db:Status-Want}\t${db:Status-Status}\n"


@dataclass
class Query:
    """What dpkg says about the packages asked for."""

    installed: dict[str, str] = field(default_factory=dict)  # name -> installed version
    off_pin: list[str] = field(default_factory=list)  # not installed (at the pinned version)
    held: list[str] = field(default_factory=list)


def query_argv(versions: dict[str, str | None]) -> list[str]:
    names = list(versions)
    _check_names(names, "query")
    return ["dpkg-query", "--show", f"--showformat={QUERY_FORMAT}", *names]


def parse_query(versions: dict[str, str | None], text: str) -> Query:
    """dpkg-query's lines for VERSIONS (name -> pinned version, or None for any version)."""
    out = Query()
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 4:
            continue
        name, version, want, status = parts[0].split(":", 1)[0], *parts[1:]
        if name not in versions:
            continue
        if status == "installed":
            out.installed[name] = version
        if want == "hold":
            out.held.append(name)
    out.off_pin = [
        n for n, v in versions.items() if n not in out.installed or (v is not None and out.installed[n] != v)
    ]
    return out
