"""Vars plugin: an inventory's stack release (stack.yml beside hosts.yml) pins every Arc box.

The release's keys become the inventory variables the roles read (arcops.fleet.release maps
them), given to the arc_servers group after its group_vars: the release outranks
group_vars/arc_servers.yml, and a box's own host_vars or a child group's group_vars can still
set what belongs to one box (a port, an address). A release that does not check out fails the
run while the inventory loads, before any play starts, with every problem on its own line.
"""

from __future__ import annotations

DOCUMENTATION = """
    name: arcops_release
    short_description: Give every Arc box the pins of the inventory's stack release
    description:
        - Reads stack.yml in each inventory folder (the release the fleet runs) and gives the
          arc_servers group the variables the roles read, plus arcops_release (id, file, the
          known stacks it matches, and those variables, which a rollback re-applies).
        - The release is checked whole first (keys, the sha256 of each file it names, the roles'
          checks, known-bad stacks); a refused release fails the inventory load.
        - An inventory without stack.yml is left to its group_vars.
        - Enabled in ansible.cfg (vars_plugins_enabled).
    extends_documentation_fragment:
        - vars_plugin_staging
"""

import os

from ansible.errors import AnsibleParserError
from ansible.inventory.group import InventoryObjectType
from ansible.plugins.vars import BaseVarsPlugin

GROUP = "arc_servers"
FILE_NAME = "stack.yml"  # arcops.fleet.release.FILE_NAME (asserted by the tests)
_LOADED: dict[tuple[str, float, int], dict] = {}  # one check per release file version and run


class VarsModule(BaseVarsPlugin):
    is_stateless = True

    def get_vars(self, loader, path, entities, cache=True):
        super().get_vars(loader, path, entities)
        entities = entities if isinstance(entities, list) else [entities]
        if not any(e.base_type is InventoryObjectType.GROUP and e.name == GROUP for e in entities):
            return {}
        file = os.path.join(os.path.realpath(path), FILE_NAME)
        try:
            st = os.stat(file)
        except FileNotFoundError:
            return {}  # no release here (and nothing imported: most runs pay nothing)
        from ansible_collections.arcops.arc.plugins.module_utils.arcops.fleet import release

        key = (file, st.st_mtime, st.st_size)
        if key not in _LOADED:
            try:
                _LOADED[key] = release.load(file)
            except release.ReleaseError as e:
                raise AnsibleParserError(str(e)) from None
        found = _LOADED[key]
        return {**found["vars"], release.RELEASE_VAR: {k: found[k] for k in ("id", "file", "known", "vars")}}
