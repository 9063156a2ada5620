#!/usr/bin/python
"""Ansible adapter over arcops.llama.cmake_cache: the Level Zero loader a configured build links."""

DOCUMENTATION = r"""
---
module: arcops_llama_loader
short_description: Read which Level Zero loader a configured llama.cpp build links, refusing none
description:
  - Reads O(build_dir)/CMakeCache.txt and returns the Level Zero loader it names (arcops'
    C(ARCOPS_ZE_LOADER) or upstream's C(ZE_LOADER_LIB)).
  - Fails when it names none (or CMake's NOTFOUND), since upstream's CMake then compiles its
    Level Zero path out and the build would allocate with sycl::malloc_device.
  - Never changes the host; supports check mode.
options:
  build_dir: {description: The configured build folder., type: path, required: true}
  src: {description: The source the build is of (named in the refusal)., type: str, default: ""}
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Check the Level Zero loader was found
  arcops.arc.arcops_llama_loader:
    build_dir: /var/cache/arcops/llama.cpp/build/b8696
  register: loader
"""

RETURN = r"""
loader: {description: The loader's path., returned: success, type: str}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.llama.cmake_cache import (
    CACHE_FILE,
    LoaderError,
    require_loader,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "build_dir": {"type": "path", "required": True},
            "src": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    path = f"{module.params['build_dir']}/{CACHE_FILE}"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(16 * 2**20)
    except OSError as e:
        module.fail_json(msg=f"{path}: cannot be read ({e.strerror})")
    try:
        loader = require_loader(text, module.params["src"] or module.params["build_dir"])
    except LoaderError as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=False, loader=loader)


if __name__ == "__main__":
    main()
