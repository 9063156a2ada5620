#!/usr/bin/python
"""The documentation of the action plugin arcops_inputs (plugins/action/arcops_inputs.py).

It runs in the controller's process and has no module code; ansible-doc reads it here."""

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
  - An action plugin - it runs on the control node, in the controller's process, where the values
    and the files they name are. Never changes anything.
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
