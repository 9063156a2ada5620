#!/usr/bin/python
"""Ansible adapter over arcops.vllm.residency_shim: build the Level Zero residency filter on the box."""

DOCUMENTATION = r"""
---
module: arcops_l0_filter
short_description: Build the Level Zero residency filter (an LD_AUDIT library) from its source
description:
  - Compiles O(src) with the project's pinned gcc flags into O(dest)/arcops-l0-residency.so,
    beside a stamp naming the source's sha256, the flags and the library's own sha256.
  - Builds only when the library is missing, its bytes no longer match the stamp, or the source
    or flags changed; otherwise reports changed=false without running the compiler.
  - The library is written beside and renamed, the stamp after it, so a build cut short leaves the
    old library (or none) and is redone on the next run.
  - Supports check mode (says whether it would build).
options:
  src:
    description: The filter's C source on the host (arcops-l0-residency.c).
    type: path
    required: true
  dest:
    description: Folder for the library and its stamp (created when missing).
    type: path
    required: true
  compiler:
    description: The C compiler to build with.
    type: str
    default: gcc
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Build the residency filter
  arcops_l0_filter:
    src: /var/cache/arcops/downloads/arcops-l0-residency.c
    dest: /opt/arcops/l0-residency
"""

RETURN = r"""
library:
  description: Path of the library.
  returned: always
  type: str
sha256:
  description: The library's sha256 (empty in check mode when it would be built).
  returned: always
  type: str
reason:
  description: Why it was built, or that it already was.
  returned: always
  type: str
"""

from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.vllm.residency_shim import BuildError, ensure


def main():
    module = AnsibleModule(
        argument_spec={
            "src": {"type": "path", "required": True},
            "dest": {"type": "path", "required": True},
            "compiler": {"type": "str", "default": "gcc"},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    try:
        result = ensure(Path(p["dest"]), Path(p["src"]), p["compiler"], check=module.check_mode)
    except (BuildError, OSError) as e:
        module.fail_json(msg=f"residency filter: {e}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
