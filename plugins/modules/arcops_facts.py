#!/usr/bin/python
"""Ansible adapter over arcops.box.facts: the box's host, GPU, PCIe, firmware and disk facts."""

DOCUMENTATION = r"""
---
module: arcops_facts
short_description: Read host, GPU, PCIe link, loaded GuC and free-disk facts of an Arc box
description:
  - Reads sysfs, procfs, debugfs and (on real hosts) the kernel journal below O(root).
  - Returns them as C(arcops) in ansible_facts. Never changes the host; supports check mode.
options:
  root:
    description: Filesystem root to read under. C(/) on real hosts; a fixture tree in the lab.
    type: path
    default: /
  disk_paths:
    description: Paths whose free space to report (the nearest existing ancestor is measured).
    type: list
    elements: path
    default: []
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Read the box
  arcops_facts:
    disk_paths: [/var/lib/docker, /srv/cache]
"""

RETURN = r"""
ansible_facts:
  description: >-
    C(arcops) with keys root, simulated, host, gpus, display_gpu, p2p (whether Linux allows
    peer-to-peer DMA between each pair of Arc GPUs: rule, cpu, gpus with each one's PCI path, pairs
    with a, b, route, allowed, why), firmware_missing (files xe asked for at boot and did not get,
    each with device, file, error, present_now), free_gib.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.box.facts import collect
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.sysroot import SysRoot


def main():
    module = AnsibleModule(
        argument_spec={
            "root": {"type": "path", "default": "/"},
            "disk_paths": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    root = SysRoot(module.params["root"])
    try:
        root.check()
    except ValueError as e:
        module.fail_json(msg=f"root: {e}")
    data = collect(root, module.params["disk_paths"])
    module.exit_json(changed=False, ansible_facts={"arcops": data})


if __name__ == "__main__":
    main()
