"""The fleet-wide variable table and the up-front check of inventory variables."""

from __future__ import annotations

import re

import pytest
from arcops.stages import user_vars
from hypothesis import example, given
from hypothesis import strategies as st

from .conftest import REPO
from .helpers.fuzz import FUZZ, json_values

ROLES = {"vllm_service": {"vllm_service_profile": "str", "vllm_service_port": "int", "vllm_service_x": "raw"}}
PREFIXES = ["arcops_", "vllm_service_"]


@pytest.mark.parametrize(
    ("given", "problems"),
    [
        (
            {"vllm_service_profil": "eager"},
            ["vllm_service_profil is not a variable arcops knows: did you mean vllm_service_profile?"],
        ),
        ({"arcops_allow_reboot": "yes please"}, ["arcops_allow_reboot must be true or false, not a string"]),
        ({"arcops_allow_reboot": "yes", "arcops_gpu_count": "2", "vllm_service_port": 8000}, []),
        ({"arcops_gpu_count": 2.5}, ["arcops_gpu_count must be a whole number, not a number"]),
        ({"arcops_gpu_count": True}, ["arcops_gpu_count must be a whole number, not a boolean"]),
        ({"arcops_mainline_kernel": True}, ["arcops_mainline_kernel must be a mapping, not a boolean"]),
        ({"arcops_mainline_kernel": "{{ kernel_plan }}"}, []),  # a template: Ansible resolves it
        ({"arcops_zzz": 1}, ["arcops_zzz is not a variable arcops knows: no arcops role or setting has it"]),
        ({"other_var": 1, "preflight_passed": True, "vllm_service_x": [1]}, []),
    ],
)
def test_check_names_the_users_variable(given, problems):
    assert user_vars.check(given, ROLES, PREFIXES) == problems


def test_role_variables_come_from_specs_and_defaults():
    specs = {"argument_specs": {"main": {"options": {"a_x": {"type": "bool"}}}, "rollback": None}}
    assert user_vars.role_variables(specs, {"a_y": 1}) == {"a_x": "bool", "a_y": "raw"}
    assert user_vars.role_variables("garbage", {}) == {}


def test_every_arcops_variable_the_project_reads_is_in_the_table():
    """One table: a new arcops_* variable in a role, playbook or inventory must be listed."""
    used = set()
    for folder in ("roles", "playbooks", "inventories"):
        for path in (REPO / folder).rglob("*.yml"):
            used |= set(re.findall(r"\barcops_[a-z_]+\b", path.read_text()))
    used |= set(re.findall(r"\barcops_[a-z_]+\b", (REPO / "site.yml").read_text()))
    modules = {p.stem for p in (REPO / "plugins" / "modules").glob("arcops_*.py")}
    facts = {"arcops_" + r.name for r in (REPO / "roles").iterdir()} | {"arcops_facts"}
    missing = used - set(user_vars.USER_VARS) - user_vars.RUN_FACTS - modules - facts
    # A role named arcops_* owns its prefix: its variables are its argument_specs' (checked there).
    roles = [r.name for r in (REPO / "roles").iterdir() if r.name.startswith("arcops_")]
    missing = {n for n in missing if not any(n == r or n.startswith(r + "_") for r in roles)}
    assert not missing, f"add to arcops.stages.user_vars.USER_VARS: {sorted(missing)}"


@FUZZ
@example({"arcops_\n": None})  # a name with a newline made a two-line problem, once
@given(st.dictionaries(st.text(max_size=20).map(lambda s: "arcops_" + s), json_values, max_size=5))
def test_check_of_any_variables_is_lines_never_an_exception(given):
    problems = user_vars.check(given, ROLES, PREFIXES)
    assert all(isinstance(p, str) and "\n" not in p for p in problems)


def test_names_the_roles_set_while_running_are_known():
    tasks = [
        {"name": "a", "ansible.builtin.set_fact": {"x_problems": [], "cacheable": True}},
        {"name": "b", "register": "x_stat", "ansible.builtin.stat": {"path": "/"}},
        {"block": [{"set_fact": {"x_inner": 1}}], "rescue": [{"register": "x_rescued"}]},
        "garbage",
    ]
    assert user_vars.run_time_names(tasks) == {"x_problems", "x_stat", "x_inner", "x_rescued"}
    assert user_vars.run_time_names(None) == set()


def test_every_roles_run_time_names_are_found_in_its_tasks():
    """preflight's own facts (preflight_problems, ...) are not typos on its second run in a play."""
    import yaml

    roles = user_vars.roles_variables(REPO / "roles", lambda path: yaml.safe_load(path.read_text()))
    assert {"preflight_problems", "preflight_warnings", "preflight_gpus"} <= set(roles["preflight"])
    assert roles["vllm_service"]["vllm_service_port"] == "int"  # from its argument_specs
    assert roles["preflight"]["preflight_user_var_pattern"] == "str"


def test_only_shapes_of_the_matching_names_leave_the_play():
    """A secret string becomes a marker; words a bool or int check needs stay as they are."""
    host = {
        "vllm_service_api_key": "s3cret",
        "arcops_allow_reboot": "Yes",
        "arcops_gpu_count": "-2",
        "arcops_stack": {"kernel_release": "6.17"},
        "arcops_inference_services": ("a", "b"),
        "arcops_sysroot": None,
        "ansible_host": "10.0.0.1",
    }
    pattern = r"^(arcops|vllm_service)_"
    assert user_vars.shapes(host, pattern) == {
        "vllm_service_api_key": "<a string>",
        "arcops_allow_reboot": "Yes",
        "arcops_gpu_count": "-2",
        "arcops_stack": {},
        "arcops_inference_services": [],
        "arcops_sysroot": None,
    }
    with pytest.raises(ValueError, match=r"pattern: '\(' is not a regular expression"):
        user_vars.shapes(host, "(")
