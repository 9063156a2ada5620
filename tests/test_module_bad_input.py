"""Bad input by class, for every Ansible module: each option of each module gets the hostile
values of its type (control characters and NUL in text, numbers out of every range, items and
keys of the wrong kind), with the module's other required options at plain values and every path
inside the test's own folder, in check mode. The module answers with a result or a failure whose
message is one line; never a Python traceback, a hang, or a change outside the test's folder.

Modules run in this process (their AnsibleModule reads the arguments Ansible would send), so
the ~1,000 cases take seconds. The tally is docs/testing.md's."""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from .helpers.time_limit import Hang, within

REPO = Path(__file__).resolve().parents[1]
# A module file without main() documents an action plugin that runs on the controller
# (arcops_inputs, arcops_user_vars): tests/test_user_vars.py and the role-input tests feed those.
MODULES = sorted(
    p.stem for p in (REPO / "plugins" / "modules").glob("arcops_*.py") if "\ndef main(" in p.read_text()
)

# (A lone surrogate is not here: Ansible's controller cannot send one, so no module receives it.)
TEXTS = ["", "a\x00b", "line\nbreak", "\x1b[31m", "x" * 70_000, "../../etc/passwd", "\u202etxt"]
HOSTILE = {
    "str": TEXTS,
    "path": [*TEXTS, "/", "relative/path", "/dev/zero", "/proc/self/mem"],
    "raw": [None, [], {"a": [None]}, "\x00", 10**30],
    "int": [10**30, -(10**30), -1, 0, "nan", "1e400", 1.5, True],
    "float": [1e308, -1e308, "inf", "-inf", "nan", "1e400", -1, 0, True],
    "bool": ["maybe", 2, None, []],
    "list": [[None], [{"a": 1}], ["\x00"], [10**30], "x", [[["deep"]]], [""] * 1000],
    "dict": [{"\x00": "x"}, {"a": [None]}, {"": ""}, [1], "x", {"a": {"b": {"c": float("inf")}}}],
}


def _module(name: str):
    collections = str(REPO / ".collections")
    if collections not in sys.path:
        sys.path.insert(0, collections)
    return importlib.import_module(f"ansible_collections.arcops.arc.plugins.modules.{name}")


@functools.cache
def _options(name: str) -> dict:
    return yaml.safe_load(_module(name).DOCUMENTATION).get("options") or {}


def _plain(option: dict, tmp: Path) -> object:
    """A plain value of the option's type (paths inside the test's folder)."""
    kind = option.get("type", "str")
    if option.get("choices"):
        return option["choices"][0]
    return {
        "str": "x",
        "path": str(tmp / "plain"),
        "int": 1,
        "float": 0.5,
        "bool": False,
        "list": [],
        "dict": {},
        "raw": {},
    }[kind]


def run(name: str, args: dict, tmp: Path) -> dict:
    """The module's result for ARGS, as Ansible would read it from its stdout."""
    from ansible.module_utils import basic

    module = _module(name)
    params = {
        **args,
        "_ansible_check_mode": True,
        "_ansible_tmpdir": str(tmp),
        "_ansible_remote_tmp": str(tmp),
        "_ansible_keep_remote_files": False,
    }
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": params}).encode("utf-8", "surrogatepass")
    basic._ANSIBLE_PROFILE = "legacy"  # as `python -m` debugging of a module sends it
    out = io.StringIO()
    try:
        with within(20), contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            module.main()
    except Hang:
        pytest.fail(f"{name} did not answer within 20 s")
    finally:
        basic._ANSIBLE_ARGS = basic._ANSIBLE_PROFILE = None
    return json.loads(out.getvalue())


def _cases():
    for name in MODULES:
        for option, spec in _options(name).items():
            for n, value in enumerate(HOSTILE[spec.get("type", "str")]):
                yield name, option, n, value


CASES = list(_cases())


def _one(name: str, option: str, value: object, tmp: Path) -> str:
    options = _options(name)
    args = {k: _plain(v, tmp) for k, v in options.items() if v.get("required")}
    args[option] = value
    result = run(name, args, tmp)
    assert "exception" not in result, result.get("exception")
    if result.get("failed"):
        msg = result.get("msg")
        assert isinstance(msg, str) and msg and "Traceback" not in msg, result
        return "refused"
    return "answered"


def test_every_hostile_option_is_answered_or_refused_and_docs_state_the_tally(tmp_path):
    """Every case once: those that end otherwise are listed together, then the tally is checked."""
    ended, broken = Counter(), []
    for k, (name, option, n, value) in enumerate(CASES):
        folder = tmp_path / str(k)
        folder.mkdir()
        try:
            # Relative paths resolve in the case's own folder, wherever the clone lies.
            with contextlib.chdir(folder):
                ended[_one(name, option, value, folder)] += 1
        except (Exception, pytest.fail.Exception) as e:  # a module's traceback, or a check above
            broken.append(f"{name} {option} value #{n}: {type(e).__name__}: {str(e)[:300]}")
    assert not broken, (
        f"{len(broken)} case(s) ended in neither a result nor a one-line failure:\n" + "\n".join(broken)
    )
    text = (REPO / "docs" / "testing.md").read_text()
    stated = (
        f"modules: {len(MODULES)} modules, {sum(ended.values())} cases, "
        f"{ended['refused']} refused, {ended['answered']} answered"
    )
    assert stated in text, f"docs/testing.md should say: {stated}"
