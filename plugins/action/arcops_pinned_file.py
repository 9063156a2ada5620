"""Action plugin for arcops_pinned_file: copy a control-node file over only when the box lacks it.

The module answers first (is the pinned file at dest?). Only when it says needs_copy is the
control-node file transferred to the box's temporary folder and handed to the module again,
which checks its sha256 there before renaming it into place. A converged box costs one module
call and no transfer. The module (plugins/modules/arcops_pinned_file.py) documents the options.
"""

import os

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

OPTIONS = {"file", "dest", "mode", "dir_mode", "timeout"}


class ActionModule(ActionBase):
    # The temporary folder is made only when a copy is needed: a converged box costs one call.
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        unknown = sorted(set(args) - OPTIONS)
        if unknown:
            return {**result, "failed": True, "msg": f"{unknown[0]}: not an option of arcops_pinned_file"}
        file = args.get("file")
        local = file.get("path") if isinstance(file, dict) else None
        if isinstance(local, str) and not os.path.isfile(local):
            return {**result, "failed": True, "msg": f"{local}: no such file on the control node"}
        try:
            done = self._execute_module(
                module_name="arcops.arc.arcops_pinned_file", module_args=args, task_vars=task_vars
            )
            if not done.get("needs_copy"):
                return {**result, **done}
            tmpdir = self._connection._shell.tmpdir or self._make_tmp_path()
            remote = self._connection._shell.join_path(tmpdir, "pinned")
            self._transfer_file(local, remote)
            self._fixup_perms2((tmpdir, remote))
            done = self._execute_module(
                module_name="arcops.arc.arcops_pinned_file",
                module_args={**args, "src": remote},
                task_vars=task_vars,
            )
            return {**result, **done}
        except AnsibleError as e:
            return {**result, "failed": True, "msg": f"{local or args.get('dest')}: {e.message}"}
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
