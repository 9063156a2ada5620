"""Action plugin: a role's input checks in the controller's own process (no module round-trip).

The values and the pinned files given by path are on the control node: checking them there
costs no trip to the box and hashes each local file where it is. Same arguments, result and
messages as the module (library/arcops_inputs.py documents them).
"""

import sys
from pathlib import Path

from ansible.plugins.action import ActionBase

SRC = Path(__file__).resolve().parents[2] / "src"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        unknown = sorted(set(args) - {"role", "values"})
        if unknown:
            return {**result, "failed": True, "msg": f"{unknown[0]}: not an option of arcops_inputs"}
        if str(SRC) not in sys.path:
            sys.path.insert(0, str(SRC))
        from arcops.stages import role_inputs

        try:
            found = role_inputs.problems(args.get("role"), args.get("values"))
        except role_inputs.InputsError as e:
            return {**result, "failed": True, "msg": str(e)}
        if found:
            return {**result, "failed": True, "msg": role_inputs.message(found), "problems": found}
        return {**result, "changed": False, "problems": []}
