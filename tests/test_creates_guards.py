"""A run cut off half-way (the control node dies, the box loses power) must not leave a partial
file that a later run trusts. A `creates:` guard in a role therefore names either a marker that a
later task writes once the work is whole (`.arcops-*`), or a file that only an atomic rename
(`mv`) puts in place. A guard on the file a command writes as it goes (an installer's first file,
a compiler's output, an archive being written) fails this test."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always"):
            yield from _tasks(node.get(key))


def _guards():
    for path in sorted((REPO / "roles").glob("*/tasks/*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text()) or []):
            for module, args in task.items():
                if isinstance(args, dict) and "creates" in args:
                    yield path.relative_to(REPO), task.get("name"), module, args


def _role_vars() -> dict:
    found = {}
    for path in sorted([*REPO.glob("roles/*/defaults/main.yml"), *REPO.glob("roles/*/vars/main.yml")]):
        found.update(yaml.safe_load(path.read_text()) or {})
    return found


def _is_marker(creates: str, variables: dict) -> bool:
    """The guarded path's last part is a marker, written out or through one role variable."""
    name = creates.strip()
    if name.startswith("{{") and name.endswith("}}") and name[2:-2].strip() in variables:
        name = str(variables[name[2:-2].strip()])
    return name.rsplit("/", 1)[-1].startswith(".arcops-")


def test_every_creates_guard_trusts_only_a_marker_or_a_rename():
    bad, variables = [], _role_vars()
    for path, name, module, args in _guards():
        marker = _is_marker(str(args["creates"]), variables)
        renamed = module.endswith("command") and (args.get("argv") or [None])[0] == "mv"
        writes_partial = any(".partial" in str(a) for a in args.get("argv") or [])
        if not (marker or renamed or writes_partial):
            bad.append(f"{path}: {name!r} trusts {args['creates']}")
    assert not bad, "a partial file could pass these guards:\n" + "\n".join(bad)


def test_the_guards_are_found():
    assert len(list(_guards())) >= 4
