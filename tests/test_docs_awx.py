"""docs/awx.md stays true: every variable it names is one arcops reads (the fleet-wide table or a
role's own), and every playbook it names exists."""

import re

import yaml
from arcops.stages import user_vars

from .conftest import REPO

PAGE = REPO / "docs" / "awx.md"
PREFIXES = ("arcops_", "vllm_service_", "llama_cpp_sycl_", "intel_stack_", "mainline_kernel_", "preflight_")


def test_every_variable_the_awx_page_names_exists():
    roles = user_vars.roles_variables(REPO / "roles", lambda path: yaml.safe_load(path.read_text()))
    known = user_vars.known_names(roles)
    named = set(re.findall(r"`([a-z][a-z0-9_]+)`", PAGE.read_text()))
    ours = {n for n in named if n.startswith(PREFIXES)}
    assert len(ours) >= 15, ours  # the page names the rollout's and the secrets' variables
    assert sorted(ours - set(known)) == []


def test_every_playbook_the_awx_page_names_exists():
    named = set(re.findall(r"`((?:playbooks/[a-z_]+|site)\.yml)`", PAGE.read_text()))
    assert {"site.yml", "playbooks/rollout.yml"} <= named
    assert sorted(n for n in named if not (REPO / n).is_file()) == []
