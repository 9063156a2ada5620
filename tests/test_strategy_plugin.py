"""plugins/strategy/arcops_linear.py: linear through Mitogen, whose module scan must find the
helpers' relative imports (`from . import firmware`), or the box lacks them at run time."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO
from .test_ansible_module import ANSIBLE, needs_ansible

PLUGIN = REPO / "plugins" / "strategy" / "arcops_linear.py"
PREFIX = "ansible.module_utils."


def _load_plugin(name: str = "arcops_linear_under_test"):
    spec = importlib.util.spec_from_file_location(name, PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _helper_closure(module_file: Path) -> set[str]:
    """Every arcops helper a module reaches, read with ast (absolute and relative imports)."""
    seen: set[str] = set()
    queue = [(module_file, "")]
    while queue:
        path, package = queue.pop()
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
                names = [target, *(f"{target}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX + "arcops"):
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for name in names:
                short = name.removeprefix(PREFIX)
                file = REPO / "src" / (short.replace(".", "/") + ".py")
                if file.is_file() and name not in seen:
                    seen.add(name)
                    queue.append((file, name.rsplit(".", 1)[0]))
    return seen


pytest.importorskip("ansible_mitogen")


@pytest.mark.parametrize("module", sorted(p.name for p in (REPO / "library").glob("arcops_*.py")))
def test_mitogen_scan_finds_every_helper_a_module_imports(module):
    _load_plugin()
    from ansible_mitogen import module_finder

    found = {
        name
        for name, _, _ in module_finder.scan(
            f"ansible.modules.{module[:-3]}", str(REPO / "library" / module), [str(REPO / "src")]
        )
    }
    need = {PREFIX + n.removeprefix(PREFIX) for n in _helper_closure(REPO / "library" / module)}
    assert need, f"{module} imports no arcops helper?"
    assert need <= found, f"missing from the scan: {sorted(need - found)}"


def test_without_mitogen_it_is_plain_linear(monkeypatch):
    from ansible.plugins.strategy.linear import StrategyModule as Linear

    monkeypatch.setitem(sys.modules, "ansible_mitogen", None)  # import fails, as when not installed
    monkeypatch.setitem(sys.modules, "ansible_mitogen.loaders", None)
    plugin = _load_plugin("arcops_linear_without_mitogen")
    assert issubclass(plugin.StrategyModule, Linear) and plugin.StrategyModule.__mro__[1] is Linear


@needs_ansible
def test_a_module_with_relative_helper_imports_runs_through_mitogen(dual_b60, tmp_path):
    """A real run: arcops_facts (facts -> firmware, gpus, host, journal) on the local box."""
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_STRATEGY="arcops_linear",
        ANSIBLE_STDOUT_CALLBACK="json",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_DEPRECATION_WARNINGS="0",
    )
    playbook = tmp_path / "facts.yml"
    playbook.write_text(
        "---\n- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        f"    - arcops_facts: {{root: {dual_b60}}}\n"
    )
    argv = [
        str(Path(ANSIBLE).with_name("ansible-playbook")),
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        str(playbook),
    ]
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    task = json.loads(result.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert [g["guc_loaded"] for g in task["ansible_facts"]["arcops"]["gpus"]] == ["70.60.0", "70.60.0"]
