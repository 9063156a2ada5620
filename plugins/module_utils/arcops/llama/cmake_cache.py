"""What a llama.cpp build's CMakeCache.txt says about the Level Zero loader it links.

arcops' change needs ze_loader (its configure fails without it); upstream's CMake instead
compiles its Level Zero path out, silently, when it finds no loader: such a build would
allocate with sycl::malloc_device, the host-RAM mirror the change is for. The loader is read
from the cache (ARCOPS_ZE_LOADER, arcops' own variable, or upstream's ZE_LOADER_LIB) and a
build without one is refused.

Stdlib only: it runs on the box inside the arcops_llama_loader module.
"""

from __future__ import annotations

import re

CACHE_FILE = "CMakeCache.txt"
# "NAME:FILEPATH=value" lines of the cache; the first of these names wins.
_LOADER_RE = re.compile(r"^(?:ARCOPS_ZE_LOADER|ZE_LOADER_LIB):FILEPATH=(.*)$", re.M)


class LoaderError(ValueError):
    """A build that would not allocate through Level Zero; one line, says why."""


def ze_loader(cache_text: str) -> str:
    """The Level Zero loader the cache names, "" when it names none (CMake's NOTFOUND included)."""
    m = _LOADER_RE.search(cache_text)
    value = m.group(1).strip() if m else ""
    return "" if value.endswith("NOTFOUND") else value


def require_loader(cache_text: str, src: str) -> str:
    """The loader, or LoaderError saying the build is refused."""
    loader = ze_loader(cache_text)
    if not loader:
        raise LoaderError(
            f"CMake found no Level Zero loader (libze-dev) for {src}: the build would allocate with "
            "sycl::malloc_device. Nothing was installed."
        )
    return loader
