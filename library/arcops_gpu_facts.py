#!/usr/bin/python
"""Ansible adapter over arcops.gpus: report the host's Intel GPUs as facts."""

DOCUMENTATION = r"""
---
module: arcops_gpu_facts
short_description: Report Intel GPUs (PCI display functions), their drivers and DRM nodes
description:
  - Reads sysfs below O(root) and returns every Intel display-class PCI function.
  - Never changes the host; supports check mode.
options:
  root:
    description: Filesystem root to read under. C(/) on real hosts; a fixture tree in the lab.
    type: path
    default: /
author: arcops
"""

EXAMPLES = r"""
- name: Read the GPUs
  arcops_gpu_facts:
  register: gpu_facts
"""

RETURN = r"""
ansible_facts:
  description: C(arcops_gpus) (list of GPUs) and C(arcops_hardware_simulated) (bool).
  returned: always
  type: dict
"""

from ansible.module_utils.arcops.gpus import scan
from ansible.module_utils.arcops.sysroot import SysRoot
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={"root": {"type": "path", "default": "/"}}, supports_check_mode=True)
    sysroot = SysRoot(module.params["root"])
    module.exit_json(
        changed=False,
        ansible_facts={
            "arcops_gpus": [g.as_dict() for g in scan(sysroot)],
            "arcops_hardware_simulated": sysroot.simulated,
        },
    )


if __name__ == "__main__":
    main()
