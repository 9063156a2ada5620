"""Lookup: one sha256 over control-node files and folders (a stage's seal inputs)."""

DOCUMENTATION = r"""
---
name: arcops_sha256
short_description: One sha256 over the contents of control-node files and folders
description:
  - Hashes every regular file under each term (a file, or a folder walked in name order), with
    its path relative to the term, into one sha256. Caches (C(__pycache__), C(.pyc)),
    C(*.egg-info) and C(devtools) folders are skipped.
  - A stage's seal keeps it for the code (roles, modules, the helper package) and the small
    files its variables name (a lock), so a change to any of them ends the fast path.
  - A term that does not exist hashes as missing (the seal then differs once it appears).
options:
  _terms:
    description: Files or folders on the control node.
    type: list
    elements: path
    required: true
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Hash the code the role runs
  ansible.builtin.debug:
    msg: "{{ lookup('arcops.arc.arcops_sha256', role_path ~ '/..', role_path ~ '/../../plugins') }}"
"""

RETURN = r"""
_raw:
  description: The sha256, hex.
  type: list
  elements: str
"""

import hashlib
import os

from ansible.plugins.lookup import LookupBase

# Skipped: caches, pip's *.egg-info of the editable install and the developers' tools. None of
# them is in the collection (galaxy.yml) or run by a box, and the same code must hash the same
# from the clone and from the installed collection (or every stage's seal would differ).
SKIP_DIRS = {"__pycache__", ".pytest_cache", "devtools"}


def _walk(top):
    if not os.path.isdir(top):
        yield "", top
        return
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            if not name.endswith(".pyc"):
                full = os.path.join(folder, name)
                yield os.path.relpath(full, top), full


def tree_sha256(terms):
    digest = hashlib.sha256()
    for term in terms:
        digest.update(b"\0term\0" + os.path.basename(os.path.normpath(term)).encode())
        for rel, full in _walk(term):
            digest.update(b"\0file\0" + rel.encode() + b"\0")
            try:
                with open(full, "rb") as f:
                    while chunk := f.read(1 << 20):
                        digest.update(chunk)
            except OSError:
                digest.update(b"\0missing\0")
    return digest.hexdigest()


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return [tree_sha256([str(t) for t in terms])]
