"""What every arcops module checks in its arguments before it does anything else: each path
option (and each path in a list option) is one the kernel can take, so a bad one is a one-line
failure naming the option instead of a Python traceback from deep inside (ValueError "embedded
null byte", OSError "File name too long").

Stdlib only: shipped as module_utils (the modules pass their AnsibleModule in).
"""

from __future__ import annotations

import os
import stat

PATH_MAX = 4096  # bytes, with the terminating NUL (Linux)
NAME_MAX = 255  # bytes of one name in a path


def path_problem(name: str, value: str) -> str | None:
    """Why VALUE, given as option NAME, is not a path the kernel takes, or None."""
    raw = value.encode("utf-8", "surrogateescape")
    if b"\0" in raw:
        return f"{name}: a path cannot hold a NUL byte"
    if len(raw) >= PATH_MAX:
        return f"{name}: a path of {len(raw)} bytes is longer than the kernel takes ({PATH_MAX - 1})"
    if any(len(part) > NAME_MAX for part in raw.split(b"/")):
        return f"{name}: a name in the path is longer than {NAME_MAX} bytes"
    return None


def problems(spec: dict, params: dict) -> list[str]:
    """Every path option's problem (path type, or a list of paths), in the spec's order."""
    found = []
    for name, option in spec.items():
        value = params.get(name)
        if option.get("type") == "path" and isinstance(value, str):
            found.append(path_problem(name, value))
        elif option.get("type") == "list" and option.get("elements") == "path" and isinstance(value, list):
            found += [path_problem(f"{name}[{n}]", v) for n, v in enumerate(value) if isinstance(v, str)]
    return [p for p in found if p]


def refuse_bad_paths(module) -> None:
    """Fail MODULE (an AnsibleModule) on its first bad path option, before it does anything."""
    found = problems(module.argument_spec, module.params)
    if found:
        module.fail_json(msg=found[0])


def executable_problem(name: str, path: str) -> str | None:
    """Why PATH, given as option NAME, cannot be run as a program, or None."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"{name}: {path}: {e.strerror}"
    if not stat.S_ISREG(st.st_mode):
        return f"{name}: {path}: not a regular file"
    if not os.access(path, os.X_OK):
        return f"{name}: {path}: not executable"
    return None
