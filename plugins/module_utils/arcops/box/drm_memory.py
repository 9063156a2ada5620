"""GPU memory per card, from the DRM clients' fdinfo (the kernel's drm-usage-stats): what the xe
driver holds for every process in host RAM (regions system and gtt) and in VRAM, added up per card.

Each open DRM file is a client (drm-client-id, unique per device); one client shows through every
fd that shares it (dup, fork), so a client is counted once. Sizes are bytes ('123 KiB', '4 MiB'
and a bare number, as the kernel prints them). Reading another process's fdinfo needs root (or
the same user); what cannot be read is counted as skipped, never as zero.

Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..common.sysroot import SysRoot

UNITS = {"": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
HOST_REGIONS = ("system", "gtt")


def size(text: str) -> int | None:
    """fdinfo's '123 KiB' / '4 MiB' / '512' in bytes; None when it is not a size."""
    parts = text.split()
    # ASCII digits only: str.isdigit() also takes '²', which int() refuses.
    if not 1 <= len(parts) <= 2 or not (parts[0].isascii() and parts[0].isdigit()):
        return None
    unit = UNITS.get(parts[1] if len(parts) == 2 else "")
    return None if unit is None else int(parts[0]) * unit


@dataclass
class Client:
    driver: str
    pdev: str
    client_id: str
    # drm-<stat>-<region> in bytes: total-system, resident-gtt, total-vram0, ...
    memory: dict[str, int] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)


def parse(text: str) -> Client | None:
    """One fdinfo file: the DRM client it shows, or None for any other kind of fd."""
    keys: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.startswith("drm-"):
            keys[key] = value.strip()
    if not keys.get("drm-driver") or not keys.get("drm-client-id"):
        return None
    memory = {}
    for key, value in keys.items():
        stat, _unused, region = key[len("drm-") :].partition("-")
        if stat in ("total", "resident", "shared") and region:
            found = size(value)
            if found is not None:
                memory[f"{stat}-{region}"] = found
    return Client(keys["drm-driver"], keys.get("drm-pdev", ""), keys["drm-client-id"], memory)


def clients(root: SysRoot, pids: list[int] | None = None) -> tuple[list[Client], int]:
    """Every DRM client of the given processes (all of /proc when None), each once; and how many
    processes' fdinfo could not be read (a process that ended meanwhile is not one)."""
    found: dict[tuple[str, str, str], Client] = {}
    skipped = 0
    names = [str(p) for p in pids] if pids is not None else [n for n in root.listdir("/proc") if n.isdigit()]
    for pid in names:
        folder = root.path(f"/proc/{pid}/fdinfo")
        try:
            fds = sorted(folder.iterdir(), key=lambda p: p.name)
        except FileNotFoundError:
            continue  # the process ended
        except OSError:
            skipped += 1  # not ours to read (run as root)
            continue
        for fd in fds:
            try:
                client = parse(fd.read_text(errors="replace"))
            except OSError:
                continue  # closed while reading
            if client is None:
                continue
            key = (client.driver, client.pdev, client.client_id)
            seen = found.setdefault(key, client)
            if int(pid) not in seen.pids:
                seen.pids.append(int(pid))
    return list(found.values()), skipped


def per_card(found: list[Client]) -> list[dict]:
    """One row per card (pdev): its clients, processes and memory by region, host RAM first."""
    cards: dict[tuple[str, str], dict] = {}
    for c in found:
        row = cards.setdefault(
            (c.pdev, c.driver), {"pdev": c.pdev, "driver": c.driver, "clients": 0, "pids": [], "memory": {}}
        )
        row["clients"] += 1
        row["pids"] = sorted(set(row["pids"]) | set(c.pids))
        for key, value in c.memory.items():
            row["memory"][key] = row["memory"].get(key, 0) + value
    rows = []
    for _unused, row in sorted(cards.items()):
        mem = row["memory"]
        # Resident where the driver reports it; total otherwise (both are per region).
        host = sum(mem.get(f"resident-{r}", mem.get(f"total-{r}", 0)) for r in HOST_REGIONS)
        vram = sum(v for k, v in mem.items() if k.startswith("resident-vram"))
        rows.append({**row, "host_bytes": host, "vram_bytes": vram})
    return rows
