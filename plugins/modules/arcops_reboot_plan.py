#!/usr/bin/python
"""Ansible adapter over arcops.kernel.reboot_plan: must the box reboot for its pins, and why."""

DOCUMENTATION = r"""
---
module: arcops_reboot_plan
short_description: Say whether a box must reboot for its pinned kernel and GuC, and why
description:
  - A reboot is needed when O(kernel) is given and another kernel runs (the box then boots it
    once, a trial), or when O(guc) is given and an xe GPU in O(gpus) loaded another GuC.
  - Never changes the host; supports check mode.
options:
  running:
    description: The kernel that runs (C(ansible_facts.kernel)).
    type: str
    required: true
  kernel:
    description: The pinned kernel this run installs and boots; omitted when it installs or boots none.
    type: str
  guc:
    description: The pinned GuC version this run installs; omitted when it installs no firmware.
    type: str
  gpus:
    description: The GPUs as C(arcops_facts) reads them (C(address), C(driver), C(guc_loaded)).
    type: list
    elements: dict
    required: true
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Work out whether the running stack differs from the pins
  arcops.arc.arcops_reboot_plan:
    running: "{{ ansible_facts.kernel }}"
    kernel: 6.17.0-1009-intel
    guc: 70.60.0
    gpus: "{{ ansible_facts.arcops.gpus }}"
  register: plan
"""

RETURN = r"""
reasons:
  description: Why the box must reboot, one line each (empty when it need not).
  returned: always
  type: list
  elements: str
trial: {description: Whether the reboot boots the pinned kernel once (a trial)., returned: always, type: bool}
reboot: {description: Whether the box must reboot., returned: always, type: bool}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.kernel.reboot_plan import plan


def main():
    module = AnsibleModule(
        argument_spec={
            "running": {"type": "str", "required": True},
            "kernel": {"type": "str"},
            "guc": {"type": "str"},
            "gpus": {"type": "list", "elements": "dict", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        result = plan(p["running"], p["kernel"] or None, p["guc"] or None, p["gpus"])
    except ValueError as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=False, **result.as_dict())


if __name__ == "__main__":
    main()
