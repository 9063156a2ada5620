#!/usr/bin/python
"""Ansible adapter over arcops.stages.user_vars: the inventory's variables, checked before any change."""

DOCUMENTATION = r"""
---
module: arcops_user_vars
short_description: Refuse misspelled arcops variables and values of the wrong type, by the user's name
description:
  - Checks every variable named C(arcops_*) or after an arcops role (C(vllm_service_*), ...)
    against the fleet-wide table in arcops.stages.user_vars and each role's argument_specs, defaults
    and vars under O(roles_dir), and the names its tasks register or set while they run. An
    unknown name is refused with the closest known one.
  - Runs on the control node, where the roles are; in-process through the action plugin of the
    same name (plugins/action), or as a module with delegate_to localhost. Never changes anything.
options:
  variables:
    description:
      - The variables to check, name to value (required, unless the action plugin is given
        O(pattern)). Messages name variables, never values.
      - "Pass each value's shape, not a secret: an empty mapping or list for one, numbers and
        booleans as they are, any other string as a marker."
    type: dict
  pattern:
    description:
      - Action plugin only, instead of O(variables) - a regular expression; the host's own
        variables (inventory, facts, extra vars) whose names match it are checked, by their shape.
    type: str
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
author: arcops maintainers (@arcops)
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.stages.user_vars import (
    inventory_problems,
    problems_message,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "variables": {"type": "dict"},
            "roles_dir": {"type": "path", "required": True},
            "host": {"type": "str"},
            "address": {"type": "str"},
            "connection": {"type": "str", "default": "ssh"},
            "pattern": {"type": "str"},  # the action plugin's (it never passes it on)
        },
        supports_check_mode=True,
    )
    p = module.params
    if p["variables"] is None:
        module.fail_json(msg="variables: required (pattern is the action plugin's)")
    try:
        problems = inventory_problems(
            p["variables"], p["roles_dir"], p["host"], p["address"], p["connection"]
        )
    except ValueError as e:
        module.fail_json(msg=str(e))
    if problems:
        module.fail_json(msg=problems_message(problems), problems=problems)
    module.exit_json(changed=False, problems=[])


if __name__ == "__main__":
    main()
