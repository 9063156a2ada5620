"""Evidence of a GPU hang, taken before it is gone: py-spy stacks of a container's Python
processes, and each card's xe devcoredump (copied off, then freed so the next hang can leave one).

The watchdog takes both when the xe driver resets an engine during a start; a diagnostics bundle
takes the devcoredumps the same way.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from ..common.sysroot import SysRoot
from .docker_api import DockerError


def python_stacks(
    engine,
    container: str,
    sysroot: SysRoot,
    where: Path,
    py_spy: str = "py-spy",
    timeout: float = 20.0,
    clock: Callable[[], float] = time.time,
) -> list[dict]:
    """py-spy dump of every python process in the container: {pid, exe, file} or {pid, exe, error}.

    The dumps run side by side and share one deadline (TIMEOUT), so a process stuck in the driver
    cannot hold up a restart for long.
    """
    try:
        pids = engine.pids(container, sysroot)
    except DockerError as e:
        return [{"pid": None, "error": f"container processes: {e}"}]
    stacks: list[dict] = []
    running = []
    for pid in pids:
        exe = sysroot.link_name(f"/proc/{pid}/exe") or ""
        if not exe.startswith("python"):
            continue
        entry: dict = {"pid": pid, "exe": exe}
        stacks.append(entry)
        try:
            proc = subprocess.Popen(
                [py_spy, "dump", "--pid", str(pid)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
            )
        except FileNotFoundError:
            entry["error"] = f"{py_spy} not found (install py-spy)"
            continue
        except OSError as e:
            entry["error"] = f"{py_spy}: {e}"
            continue
        running.append((entry, proc))
    deadline = clock() + timeout
    for entry, proc in running:
        try:
            out, err = proc.communicate(timeout=max(deadline - clock(), 0.1))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            entry["error"] = f"py-spy took more than {timeout:g} s"
            continue
        if proc.returncode != 0:
            tail = (err.strip() or out.strip())[-500:]
            entry["error"] = f"py-spy exited {proc.returncode}: {tail}"
            continue
        where.mkdir(parents=True, exist_ok=True)
        path = where / f"stack-{entry['pid']}.txt"
        path.write_text(out, encoding="utf-8")
        entry["file"] = str(path)
    return stacks


def take_devcoredumps(sysroot: SysRoot, where: Path, free: bool = True) -> list[dict]:
    """Copy each card's xe devcoredump into WHERE, then free it (write to data) unless free is
    false: {card, device, file, bytes, freed} or {card, device, error} per card that had one."""
    dumps = []
    for card in sysroot.listdir("/sys/class/drm"):
        if not re.fullmatch(r"card\d+", card):
            continue
        data = sysroot.path(f"/sys/class/drm/{card}/device/devcoredump/data")
        if not data.exists():
            continue
        device = sysroot.link_name(f"/sys/class/drm/{card}/device")
        target = where / f"devcoredump-{card}.txt"
        try:
            where.mkdir(parents=True, exist_ok=True)
            with data.open("rb") as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            if free:
                with data.open("w") as freed:
                    freed.write("1")
        except OSError as e:
            dumps.append({"card": card, "device": device, "error": f"{data}: {e}"})
            continue
        dumps.append(
            {
                "card": card,
                "device": device,
                "file": str(target),
                "bytes": target.stat().st_size,
                "freed": free,
            }
        )
    return dumps
