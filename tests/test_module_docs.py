"""Each module's DOCUMENTATION says what its argument_spec does: the same options, types,
defaults, choices and required flags (ansible-doc is where users read them)."""

import importlib
import pkgutil
import sys
import types

import arcops
import pytest
import yaml

from .conftest import REPO

MODULES = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("arcops_*.py"))


class _Spec(Exception):
    def __init__(self, spec):
        self.spec = spec


PREFIX = "ansible_collections.arcops.arc.plugins.module_utils."


def _alias_module_utils() -> None:
    """The collection's module_utils arcops.X is the package arcops.X (the same files)."""
    sys.modules.setdefault(PREFIX + "arcops", arcops)
    for info in pkgutil.walk_packages(arcops.__path__, "arcops."):
        if info.name.endswith(".__main__"):
            continue  # importing it runs the CLI
        sys.modules.setdefault(PREFIX + info.name, importlib.import_module(info.name))


def argument_spec(name: str) -> dict:
    """The module's argument_spec, caught where main() hands it to AnsibleModule; for a name that
    is an action plugin only (its module file documents it, with no code), the plugin's."""
    import ansible.module_utils.basic as basic

    if "def main(" not in (REPO / "plugins" / "modules" / f"{name}.py").read_text():
        action = types.ModuleType(name)
        source = (REPO / "plugins" / "action" / f"{name}.py").read_text()
        exec(compile(source, name, "exec"), action.__dict__)
        return action.ARGUMENT_SPEC

    def capture(*_, argument_spec=None, **__):
        raise _Spec(argument_spec)

    _alias_module_utils()
    module = types.ModuleType(name)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(basic, "AnsibleModule", capture)
        exec(
            compile((REPO / "plugins" / "modules" / f"{name}.py").read_text(), name, "exec"), module.__dict__
        )
        with pytest.raises(_Spec) as caught:
            module.main()
    return caught.value.spec


def documented(name: str) -> dict:
    source = (REPO / "plugins" / "modules" / f"{name}.py").read_text()
    start = source.index('DOCUMENTATION = r"""') + len('DOCUMENTATION = r"""')
    return yaml.safe_load(source[start : source.index('"""', start)]).get("options") or {}


@pytest.mark.parametrize("name", MODULES)
def test_documentation_matches_the_argument_spec(name):
    spec, doc = argument_spec(name), documented(name)
    assert set(doc) == set(spec), "options documented vs taken"
    for option, rules in spec.items():
        said = doc[option]
        assert said.get("type", "str") == rules.get("type", "str"), option
        assert bool(said.get("required")) == bool(rules.get("required")), option
        if "default" in rules and rules["default"] not in (None, [], {}):
            assert said.get("default") == rules["default"], f"{option}: default"
        if "choices" in rules:
            assert said.get("choices") == list(rules["choices"]), f"{option}: choices"


def test_a_name_is_a_module_or_an_action_plugin_not_both():
    """An action plugin of a module's name runs instead of the module: such a module file holds
    the plugin's documentation only, never code that would not run (or would run elsewhere)."""
    both = {p.stem for p in (REPO / "plugins" / "action").glob("arcops_*.py")} & set(MODULES)
    assert both  # arcops_inputs, arcops_user_vars, arcops_seal, arcops_pinned_file
    for name in sorted(both):
        source = (REPO / "plugins" / "modules" / f"{name}.py").read_text()
        action = (REPO / "plugins" / "action" / f"{name}.py").read_text()
        # Either the plugin runs the module on the box (it calls _execute_module), or the module
        # file is documentation only.
        assert "_execute_module" in action or "def main(" not in source, name
