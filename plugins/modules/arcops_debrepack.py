#!/usr/bin/python
"""Ansible adapter over arcops.kernel.debrepack: split multi-directory run-parts calls in .debs."""

DOCUMENTATION = r"""
---
module: arcops_debrepack
short_description: Repack .debs so their maintainer scripts run on noble's one-directory run-parts
description:
  - For each package in O(packages), rewrites every run-parts call that passes several
    directories into one call per directory, writes the package again under the same name and
    version with only its control archive rebuilt (marked with an C(Arcops-Repacked) control
    field; the data archive is copied byte for byte) to O(dest), with a report beside it.
    Packages that need no change are copied unchanged. The same input gives the same output.
  - A package already repacked from the same input (same sha256) is not repacked again.
  - In check mode nothing is written; the result says which packages would be repacked.
options:
  packages: {description: Paths of the .debs on the host., type: list, elements: path, required: true}
  dest: {description: Folder for the output packages and their reports., type: path, required: true}
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Repack the mainline kernel packages
  arcops_debrepack:
    packages: [/var/cache/arcops/mainline/linux-image-unsigned-7.2.0-070200-generic_7.2.0-070200_amd64.deb]
    dest: /var/cache/arcops/mainline/repacked
  register: repacked
"""

RETURN = r"""
packages:
  description: >-
    One report per package, in input order: input, output, package, version, architecture,
    status (repacked, unchanged; "would check" in check mode when not done before), source_sha256,
    sha256, changes (script -> list of line/before/after/in_heredoc), done_before.
  returned: always
  type: list
  elements: dict
"""

from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.checksum import sha256_file
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.kernel.debrepack import (
    RepackError,
    previous_report,
    repack_all,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "packages": {"type": "list", "elements": "path", "required": True},
            "dest": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    packages, dest = module.params["packages"], Path(module.params["dest"])
    if module.check_mode:
        reports = []
        for deb in packages:
            done = previous_report(dest / Path(deb).name, sha256_file(deb)) if Path(deb).is_file() else None
            reports.append(done or {"input": deb, "status": "would check", "done_before": False})
        module.exit_json(changed=any(not r["done_before"] for r in reports), packages=reports)
    try:
        reports = repack_all(packages, dest)
    except RepackError as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=any(not r["done_before"] for r in reports), packages=reports)


if __name__ == "__main__":
    main()
