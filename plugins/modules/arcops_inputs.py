#!/usr/bin/python
"""Ansible adapter over arcops.stages.role_inputs: a role's input checks, every problem in one failure."""

DOCUMENTATION = r"""
---
module: arcops_inputs
short_description: Check a role's variables before anything changes, every problem at once
description:
  - Checks O(values) against the rules of O(role) (arcops.stages.role_inputs) and fails once, naming
    every problem by its variable, followed by C(Nothing was changed.).
  - "A pinned file (C({path | url, sha256})) must give exactly one of url (http or https) and
    path, and a sha256 of 64 lowercase hex digits; one given by path must exist and have that
    sha256 where the check runs."
  - Runs on the control node, where the values and the files they name are, in-process through
    the action plugin of the same name (plugins/action). Never changes anything.
options:
  role:
    description: The role whose rules apply.
    type: str
    required: true
    choices: [arcops_helpers, intel_stack, llama_cpp_sycl, mainline_kernel, vllm_service, verify]
  values:
    description: The role's variables by name (the ones its rules read).
    type: dict
    required: true
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Check the inputs
  arcops_inputs:
    role: mainline_kernel
    values:
      mainline_kernel_release: "{{ mainline_kernel_release }}"
      mainline_kernel_packages: "{{ mainline_kernel_packages }}"
"""

RETURN = r"""
problems:
  description: One line per problem (empty when the values pass).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.stages import role_inputs


def main():
    module = AnsibleModule(
        argument_spec={
            "role": {"type": "str", "required": True, "choices": list(role_inputs.CHECKS)},
            "values": {"type": "dict", "required": True},
        },
        supports_check_mode=True,
    )
    try:
        found = role_inputs.problems(module.params["role"], module.params["values"])
    except role_inputs.InputsError as e:
        module.fail_json(msg=str(e))
    if found:
        module.fail_json(msg=role_inputs.message(found), problems=found)
    module.exit_json(changed=False, problems=[])


if __name__ == "__main__":
    main()
