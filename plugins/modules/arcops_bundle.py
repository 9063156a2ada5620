#!/usr/bin/python
"""Ansible adapter over arcops.kernel.stack.select: verify an unpacked bundle, say what to install."""

DOCUMENTATION = r"""
---
module: arcops_bundle
short_description: Verify an unpacked Intel offline bundle against its lock and the pinned stack
description:
  - Checks every package and firmware file against the lock's sha256, the bundle's kernel and
    GuC blob version (read from its header) against the pins, and returns what to install.
  - Fails, changing nothing, on any difference. Supports check mode.
options:
  path: {description: Folder the tarball was unpacked into., type: path, required: true}
  lock:
    description: The bundle lock (as written by C(arcops stack bundle lock)).
    type: dict
    required: true
  kernel_release:
    description: "Pinned kernel release, e.g. C(6.17.0-1009-intel)."
    type: str
    required: true
  guc_version: {description: "Pinned GuC version, e.g. C(70.60.0).", type: str, required: true}
  runtime_patterns:
    description: Regular expressions (full match) of compute runtime package names.
    type: list
    elements: str
    default: ['libze1', 'libze-dev', 'libze-intel-gpu1', 'intel-level-zero-gpu.*', 'level-zero.*',
              'intel-opencl-icd', 'libigc\d*', 'libigdfcl\d*', 'intel-igc-.*', 'libigdgmm\d*',
              'intel-ocloc.*']
  firmware_platforms:
    description: GPU platform prefixes of firmware files to use.
    type: list
    elements: str
    default: [bmg]
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Verify the bundle
  arcops_bundle:
    path: /var/cache/arcops/bundles/26.18.8.2
    lock: "{{ lookup('file', 'bundle.lock.json') | from_json }}"
    kernel_release: 6.17.0-1009-intel
    guc_version: 70.60.0
  register: bundle
"""

RETURN = r"""
selection:
  description: version, top, kernel_release, kernel_packages, runtime_packages, firmware.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.kernel.bundle import (
    DEFAULT_RUNTIME_PATTERNS,
    BundleError,
)
from ansible_collections.arcops.arc.plugins.module_utils.arcops.kernel.debs import DebError
from ansible_collections.arcops.arc.plugins.module_utils.arcops.kernel.stack import select


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "lock": {"type": "dict", "required": True},
            "kernel_release": {"type": "str", "required": True},
            "guc_version": {"type": "str", "required": True},
            "runtime_patterns": {
                "type": "list",
                "elements": "str",
                "default": list(DEFAULT_RUNTIME_PATTERNS),
            },
            "firmware_platforms": {"type": "list", "elements": "str", "default": ["bmg"]},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    try:
        selection = select(
            p["path"],
            p["lock"],
            p["kernel_release"],
            p["guc_version"],
            p["runtime_patterns"],
            p["firmware_platforms"],
        )
    except (BundleError, DebError, OSError) as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=False, selection=selection)


if __name__ == "__main__":
    main()
