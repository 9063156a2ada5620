#!/usr/bin/python
"""Ansible adapter over arcops.user_vars: the inventory's variables, checked before any change."""

DOCUMENTATION = r"""
---
module: arcops_user_vars
short_description: Refuse misspelled arcops variables and values of the wrong type, by the user's name
description:
  - Checks every variable named C(arcops_*) or after an arcops role (C(vllm_service_*), ...)
    against the fleet-wide table in arcops.user_vars and each role's argument_specs, defaults
    and vars under O(roles_dir), and the names its tasks register or set while they run. An
    unknown name is refused with the closest known one.
  - Runs on the control node (delegate_to localhost), where the roles are. Never changes anything.
options:
  variables:
    description:
      - The variables to check, name to value. Messages name variables, never values.
      - "Pass each value's shape, not a secret: an empty mapping or list for one, numbers and
        booleans as they are, any other string as a marker."
    type: dict
    required: true
  roles_dir:
    description: The folder holding arcops' roles.
    type: path
    required: true
  host:
    description: The inventory name of the box (refused when it is an example placeholder).
    type: str
  address:
    description: The address Ansible connects to (ansible_host); defaults to O(host).
    type: str
  connection:
    description: The connection plugin used for the box; a local connection has no address.
    type: str
    default: ssh
author: arcops
"""

EXAMPLES = r"""
- name: Check the inventory's variables
  arcops_user_vars:
    variables: "{{ {'vllm_service_profil': 'eager'} }}"
    roles_dir: "{{ role_path | dirname }}"
  delegate_to: localhost
"""

RETURN = r"""
problems:
  description: One line per unknown name or wrong type.
  returned: always
  type: list
  elements: str
"""

from pathlib import Path

from ansible.module_utils.arcops.user_vars import check, placeholder_problem, roles_variables
from ansible.module_utils.basic import AnsibleModule


def _yaml(path: Path):
    """The parsed file, or None when it does not parse (only names matter here)."""
    import yaml

    class Loader(yaml.SafeLoader):  # !vault and other tags
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def main():
    module = AnsibleModule(
        argument_spec={
            "variables": {"type": "dict", "required": True},
            "roles_dir": {"type": "path", "required": True},
            "host": {"type": "str"},
            "address": {"type": "str"},
            "connection": {"type": "str", "default": "ssh"},
        },
        supports_check_mode=True,
    )
    roles = Path(module.params["roles_dir"])
    if not roles.is_dir():
        module.fail_json(msg=f"roles_dir: {roles} is not a folder")
    role_vars = roles_variables(roles, _yaml)
    prefixes = ["arcops_", *(f"{name}_" for name in role_vars)]
    p = module.params
    problems = check(p["variables"], role_vars, prefixes)
    if p["host"]:
        placeholder = placeholder_problem(p["host"], p["address"] or p["host"], p["connection"])
        problems += [placeholder] if placeholder else []
    if problems:
        module.fail_json(msg="inventory variables:\n- " + "\n- ".join(problems), problems=problems)
    module.exit_json(changed=False, problems=[])


if __name__ == "__main__":
    main()
