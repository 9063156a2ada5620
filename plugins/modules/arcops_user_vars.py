#!/usr/bin/python
"""The documentation of the action plugin arcops_user_vars (plugins/action/arcops_user_vars.py).

It runs in the controller's process and has no module code; ansible-doc reads it here."""

DOCUMENTATION = r"""
---
module: arcops_user_vars
short_description: Refuse misspelled arcops variables and values of the wrong type, by the user's name
description:
  - Checks every variable named C(arcops_*) or after an arcops role (C(vllm_service_*), ...)
    against the fleet-wide table in arcops.stages.user_vars and each role's argument_specs, defaults
    and vars under O(roles_dir), and the names its tasks register or set while they run. An
    unknown name is refused with the closest known one.
  - An action plugin - it runs on the control node, in the controller's process, where the roles
    are. Never changes anything.
options:
  variables:
    description:
      - The variables to check, name to value (required, unless O(pattern) is given). Messages
        name variables, never values.
      - "Pass each value's shape, not a secret: an empty mapping or list for one, numbers and
        booleans as they are, any other string as a marker."
    type: dict
  pattern:
    description:
      - Instead of O(variables) - a regular expression; the host's own variables (inventory,
        facts, extra vars) whose names match it are checked, by their shape.
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
