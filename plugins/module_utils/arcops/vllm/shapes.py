"""The shapes of vllm_service's text settings (arcops.vllm.settings uses them in its rows, so the
renderer's checks and the role's argument specs state the same rule).

Devices: the container gets GPU nodes only. Each entry maps a host node under /dev/dri onto a
container path under /dev/dri; /dev/null, which grants nothing, may stand in for a host node
where there is no GPU (the lab). No host path (a disk, /dev/mem, a socket) is ever mapped onto a
device node. Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

import re

from ..common.settings_table import Shape

DRI = "/dev/dri"
STAND_IN = "/dev/null"  # grants nothing: a lab's render node
RENDER_NODE = re.compile(r"/dev/dri/renderD[0-9]+")
_NAME_RE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+")


def _plain(path: str) -> bool:
    """Absolute, without '.', '..' or empty segments: what it says is where it goes."""
    parts = path.split("/")
    return path.startswith("/") and all(p not in ("", ".", "..") for p in parts[1:])


def under_dri(path: str) -> bool:
    return _plain(path) and (path == DRI or path.startswith(DRI + "/"))


def _device(entry: str) -> str | None:
    parts = entry.split(":")
    perms = parts[2] if len(parts) == 3 else "rwm"
    if (
        len(parts) > 3
        or not all(p.startswith("/") for p in parts[:2])
        or not perms
        or set(perms) - set("rwm")
    ):
        return (
            "is not host[:container[:perms]] with absolute paths and perms of r, w, m: "
            "write it like /dev/dri:/dev/dri"
        )
    host, container = parts[0], parts[1] if len(parts) > 1 else parts[0]
    if not under_dri(container):
        return f"maps onto {container}, not a plain path under {DRI}: the container gets GPU nodes only"
    if not (under_dri(host) or host == STAND_IN):
        return (
            f"maps the host's {host}, not a plain path under {DRI}: give GPU nodes "
            f"({STAND_IN} may stand in for one where there is no GPU)"
        )
    return None


def _model(model: str) -> str | None:
    if model.startswith("/"):
        return "is absolute: give its path under model_dir (mounted at /models)"
    if not _plain("/" + model):
        return "must be a plain path under model_dir, without '..', '.' or '//'"
    return None


def _container_name(name: str) -> str | None:
    if _NAME_RE.fullmatch(name):
        return None
    return "is not a container name: use letters, digits, '_', '.', '-' (2 characters or more)"


def render_nodes_given(devices: list[str]) -> int | None:
    """How many render nodes the entries give the container, or None when an entry gives a
    whole folder or a card node (then the count is the box's, not the text's)."""
    targets = set()
    for entry in devices:
        parts = entry.split(":")
        target = parts[1] if len(parts) > 1 else parts[0]
        if not RENDER_NODE.fullmatch(target):
            return None
        targets.add(target)
    return len(targets)


_PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def _pci_address(address: str) -> str | None:
    if _PCI_ADDRESS.fullmatch(address):
        return None
    return "is not a PCI address as sysfs writes it: domain:bus:device.function, e.g. 0000:03:00.0"


PCI_ADDRESS = Shape("A PCI address as sysfs writes it, e.g. 0000:03:00.0 (lower case).", _pci_address)
DEVICE = Shape(
    f"Each entry maps a host GPU node under {DRI} (or {STAND_IN}, which grants nothing, where there "
    f"is no GPU) onto a path under {DRI}.",
    _device,
)
MODEL_PATH = Shape("A plain relative path: no '..', '.' or '//'.", _model)
CONTAINER_NAME = Shape("Letters, digits, '_', '.', '-', 2 characters or more.", _container_name)
