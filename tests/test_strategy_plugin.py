"""plugins/strategy/arcops_linear.py: linear through Mitogen; a module whose helpers import each
other relatively (`from . import firmware`) runs through it from the collection."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO
from .helpers.ansible_run import ANSIBLE, needs_ansible

PLUGIN = REPO / "plugins" / "strategy" / "arcops_linear.py"


def _load_plugin(name: str = "arcops_linear_under_test"):
    spec = importlib.util.spec_from_file_location(name, PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pytest.importorskip("ansible_mitogen")


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
        ANSIBLE_STRATEGY="arcops.arc.arcops_linear",
        ANSIBLE_STDOUT_CALLBACK="json",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_DEPRECATION_WARNINGS="0",
    )
    playbook = tmp_path / "facts.yml"
    playbook.write_text(
        "---\n- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        f"    - arcops.arc.arcops_facts: {{root: {dual_b60}}}\n"
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
