#!/usr/bin/python
"""Ansible adapter over arcops.kernel.grub.boot_entry: can this kernel release boot, and how to pick it."""

DOCUMENTATION = r"""
---
module: arcops_boot_entry
short_description: Check /boot and grub.cfg for a kernel release, and read GRUB's saved default
description:
  - Reports whether vmlinuz and initrd exist for O(release), the grub.cfg entry path to pass to
    grub-set-default, and grubenv's saved_entry. Never changes the host; supports check mode.
  - With O(initrd_inputs), also which of those files changed after the release's initrd was
    built (a run cut off between a firmware copy and its initramfs rebuild leaves one).
options:
  release: {description: "Kernel release, e.g. C(6.17.0-1009-intel).", type: str, required: true}
  root: {description: Filesystem root to read under., type: path, default: /}
  initrd_inputs:
    description:
      - Files the initrd carries (firmware blobs); each one changed after the initrd was built is
        returned in C(entry.initrd_stale).
    type: list
    elements: path
    default: []
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Read the boot entry of the pinned kernel
  arcops_boot_entry:
    release: 6.17.0-1009-intel
  register: entry
"""

RETURN = r"""
entry:
  description:
    - release, vmlinuz, initrd, entry_path, entry_title, saved_entry, bootable, and initrd_stale
      (the O(initrd_inputs) changed since the initrd was built).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.sysroot import SysRoot
from ansible_collections.arcops.arc.plugins.module_utils.arcops.kernel.grub import boot_entry


def main():
    module = AnsibleModule(
        argument_spec={
            "release": {"type": "str", "required": True},
            "root": {"type": "path", "default": "/"},
            "initrd_inputs": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    root = SysRoot(module.params["root"])
    try:
        root.check()
    except ValueError as e:
        module.fail_json(msg=f"root: {e}")
    try:
        entry = boot_entry(root, module.params["release"], initrd_inputs=module.params["initrd_inputs"])
    except ValueError as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=False, entry=entry.as_dict())


if __name__ == "__main__":
    main()
