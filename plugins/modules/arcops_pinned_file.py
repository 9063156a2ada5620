#!/usr/bin/python
"""Ansible adapter over arcops.stages.pinned_file: bring one pinned file to the box, checked by sha256."""

DOCUMENTATION = r"""
---
module: arcops_pinned_file
short_description: Bring a pinned file (a control-node path or a URL, and its sha256) to the box
description:
  - The one way arcops roles bring a file to a box (bundles, kernel packages, installers, wheels,
    image archives, apt keys). O(file) is C({path, sha256}) for a file on the control node or
    C({url, sha256}) for a download made on the box.
  - A file already at O(dest) with the pinned sha256 is kept (nothing is copied, downloaded or
    read again; the sha256 is remembered in the file's C(user.arcops.sha256) extended attribute
    with its size and mtime). Otherwise the file lands beside O(dest) and is renamed over it only
    when its sha256 matches, so a wrong or interrupted transfer never stands at O(dest).
  - A control-node file is copied by the action plugin of the same name only when the box lacks
    it; the module then checks the copy on the box.
  - Missing folders above O(dest) are created with O(dir_mode). Supports check mode (reports
    whether the file would change; nothing is copied, downloaded or created).
options:
  file:
    description: The pinned file, C({path, sha256}) or C({url, sha256}) (http or https).
    type: dict
    required: true
  dest: {description: Where the file goes on the box (an absolute path)., type: str, required: true}
  mode: {description: The file's mode., type: str, default: "0644"}
  dir_mode: {description: The mode of folders created above O(dest)., type: str, default: "0755"}
  timeout: {description: Seconds a download may wait for the server at a time., type: int, default: 60}
  src:
    description:
      - A copy of O(file)'s path already on the box (set by the action plugin; users leave it out).
    type: str
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Bring the bundle to the box
  arcops_pinned_file:
    file: {path: files/intel-stack-2026.2.tar.xz, sha256: 5f1c...}
    dest: /var/cache/arcops/intel_stack/intel-stack-2026.2.tar.xz

- name: Download the oneAPI installer
  arcops_pinned_file:
    file: {url: "https://registrationcenter-download.intel.com/.../installer.sh", sha256: 9a0e...}
    dest: /var/tmp/arcops/installer/installer.sh
    mode: "0700"
    dir_mode: "0700"
"""

RETURN = r"""
dest: {description: Where the file is., returned: always, type: str}
sha256: {description: Its sha256., returned: always, type: str}
needs_copy:
  description: The control-node file is not on the box yet (the module ran without its action plugin).
  returned: when so
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.http import credentials
from ansible_collections.arcops.arc.plugins.module_utils.arcops.stages.pinned_file import (
    PinnedFileError,
    ensure,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "file": {"type": "dict", "required": True},
            "dest": {"type": "str", "required": True},
            "mode": {"type": "str", "default": "0644"},
            "dir_mode": {"type": "str", "default": "0755"},
            "timeout": {"type": "int", "default": 60},
            "src": {"type": "str"},
        },
        supports_check_mode=True,
    )
    p = module.params
    url = p["file"].get("url") if isinstance(p["file"], dict) else None
    userinfo = credentials(url) if isinstance(url, str) else None
    if userinfo:  # a private mirror's token: masked wherever the result would show it
        module.no_log_values.update({userinfo, userinfo.partition(":")[2]} - {""})
    try:
        done = ensure(
            p["file"],
            p["dest"],
            p["mode"],
            p["dir_mode"],
            src=p["src"],
            check_mode=module.check_mode,
            timeout=p["timeout"],
        )
    except (PinnedFileError, OSError) as e:
        module.fail_json(msg=str(e))
    module.exit_json(**done)


if __name__ == "__main__":
    main()
