"""Bytecode cache for Python modules imported from zip files, for the VM tier's base image.

Every Ansible task runs its module from a zip (AnsiballZ). Python's zipimport never writes .pyc
files: it compiles each module from source on every import, and Python 3.11's does it twice (once
to find the module's file name, once to run it). Under software emulation that is about half of
a small task's time (a `stat` task: 8 s without this, 4.5 s with it).

This keeps each compiled module under the sha256 of its source (and the interpreter's cache
tag) in CACHE_DIR. A hit gets the importing path back as its file name, so tracebacks read as
they would without the cache. Anything that goes wrong with the cache falls back to compiling,
as zipimport itself does: the cache can make an import faster, never different.

Loaded at interpreter start-up by 00-zipimport-cache.pth beside it in a site-packages folder.
Only test boxes have it: the VM image installs both files (images/vm/customize.sh), and the
container scenarios and the rollout lab mount them read-only into their boxes
(.config/molecule/config.yml, arcops_lab_box_volumes). The local lab's boxes and real boxes run
Ansible as it ships.
"""

# zipimport is loaded at start-up anyway; the rest is imported on first use, so a process that
# never imports from a zip pays nothing.
import zipimport

CACHE_DIR = "/var/cache/zipimport-pyc"
_compile = getattr(zipimport, "_compile_source", None)


def _renamed(code, path):
    import types

    consts = tuple(_renamed(c, path) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


def _load(cached, pathname):
    import marshal
    import types

    try:
        with open(cached, "rb") as f:
            code = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return _renamed(code, pathname) if isinstance(code, types.CodeType) else None


def _store(cached, code):
    import contextlib
    import marshal
    import os

    tmp = f"{cached}.{os.getpid()}.tmp"
    try:
        os.makedirs(CACHE_DIR, mode=0o755, exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(marshal.dumps(code))
        os.replace(tmp, cached)  # readers see a whole entry or none
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def compile_source(pathname, source):
    """zipimport's _compile_source(pathname, source), through the cache."""
    import hashlib
    import os
    import sys

    tag = (sys.implementation.cache_tag or "").encode()
    cached = os.path.join(CACHE_DIR, hashlib.sha256(tag + b"\0" + source).hexdigest())
    code = _load(cached, pathname)
    if code is None:
        code = _compile(pathname, source)
        _store(cached, code)
    return code


if _compile is not None:  # an interpreter without it keeps its own zipimport
    zipimport._compile_source = compile_source
