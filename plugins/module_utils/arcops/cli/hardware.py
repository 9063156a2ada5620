"""arcops box facts, gpus, gpu-memory, firmware-version, guc-loaded: what the box's hardware says."""

from __future__ import annotations

import argparse

from ..box import drm_memory, facts, firmware, journal
from ..box.pcie import PCI_DEVICES
from ..common.report import print_json, print_table
from .common import error, kernel_log, read_root, whole, with_root

GPU_COLUMNS = [
    "address",
    "device_id",
    "model",
    "driver",
    "render",
    "numa_node",
    "bar2_mib",
    "slot_link",
    "guc_loaded",
]


def _link_text(link: dict | None) -> str | None:
    if not link or link.get("width") is None:
        return None
    text = f"{link['speed_gts']:g}GT/s x{link['width']}"
    return text + (f" (max {link['max_speed_gts']:g}GT/s x{link['max_width']})" if link["downgraded"] else "")


def _simulated_banner(data: dict) -> None:
    if data["simulated"]:
        print(f"SIMULATED hardware view from {data['root']}")


def _cmd_facts(args: argparse.Namespace) -> int:
    relative = [path for path in args.disk if not path.startswith("/")]
    if relative:  # free space "here" would depend on where the command ran
        raise ValueError(f"--disk {relative[0]!r}: give an absolute path")
    data = facts.collect(read_root(args), args.disk)
    if args.json:
        print_json(data)
        return 0
    _simulated_banner(data)
    print_table([{"fact": k, "value": v} for k, v in data["host"].items()], ["fact", "value"])
    print()
    rows = [{**g, "slot_link": _link_text(g["link"])} for g in data["gpus"]]
    print_table(rows, GPU_COLUMNS)
    print(f"\ndisplay GPU: {data['display_gpu'] or 'none of these (or no display)'}")
    if data["p2p"]["pairs"]:
        print()
        print_table(data["p2p"]["pairs"], ["a", "b", "route", "allowed", "why"])
    for path, gib in data["free_gib"].items():
        print(f"free for {path}: {gib} GiB")
    return 0


def _cmd_gpus(args: argparse.Namespace) -> int:
    """Exit 1 when there is no Intel GPU: a box without one cannot serve, and scripts ask this."""
    root = read_root(args)
    data = facts.collect(root)
    if args.json:
        print_json({k: data[k] for k in ("root", "simulated", "gpus", "display_gpu")})
    else:
        _simulated_banner(data)
        if data["gpus"]:
            print_table([{**g, "slot_link": _link_text(g["link"])} for g in data["gpus"]], GPU_COLUMNS)
    if not data["gpus"]:
        error(f"arcops: no Intel GPU found in {root.path(PCI_DEVICES)}")
        return 1
    return 0


def _cmd_gpu_memory(args: argparse.Namespace) -> int:
    """Exit 1 when no process holds a DRM client: nothing to measure (not a zero reading)."""
    found, skipped = drm_memory.clients(read_root(args), args.pid or None)
    cards = drm_memory.per_card(found)
    if args.json:
        print_json({"cards": cards, "unreadable_processes": skipped})
    elif cards:
        gib = drm_memory.UNITS["GiB"]
        rows = [
            {
                "card": c["pdev"],
                "driver": c["driver"],
                "clients": c["clients"],
                "processes": len(c["pids"]),
                "host_gib": f"{c['host_bytes'] / gib:.1f}",
                "vram_gib": f"{c['vram_bytes'] / gib:.1f}",
            }
            for c in cards
        ]
        print_table(rows, ["card", "driver", "clients", "processes", "host_gib", "vram_gib"])
    said = [] if cards else ["no DRM client found in /proc (is anything using the GPUs?)"]
    if skipped:
        said.append(f"{skipped} process(es) not readable: run as root to count them")
    if said:  # one line either way
        error("arcops: " + "; ".join(said))
    return 0 if cards else 1


def _cmd_firmware_version(args: argparse.Namespace) -> int:
    try:
        found = firmware.blob_version(args.path)
    except firmware.FirmwareError as e:
        error(f"arcops: {e}")
        return 2
    if args.json:
        print_json(found.as_dict())
    else:
        print(found.version)
    return 0


def _cmd_guc_loaded(args: argparse.Namespace) -> int:
    """GuC versions the driver loaded, from a kernel log file or this boot's journal."""
    if args.journal_file:
        with kernel_log(args.journal_file) as lines:  # streamed: logs can be large
            loads = firmware.loaded_from_journal(lines)
    else:
        loads = firmware.loaded_from_journal(journal.kernel_lines())
    rows = [vars(fw) for fw in loads.values()]
    if args.json:
        print_json(rows)
    else:
        print_table(rows, ["address", "gt", "kind", "file", "version"])
    return 0


def add(sub) -> None:
    p = with_root(sub.add_parser("facts", help="host, GPUs, PCIe links, loaded GuC, free disk"))
    p.add_argument("--disk", action="append", default=[], metavar="PATH", help="report free space for PATH")
    p.set_defaults(func=_cmd_facts)

    p = with_root(sub.add_parser("gpus", help="Intel GPUs, their drivers, slot links and loaded GuC"))
    p.set_defaults(func=_cmd_gpus)

    p = with_root(
        sub.add_parser(
            "gpu-memory",
            help="host RAM (system + GTT) and VRAM the GPU driver holds, per card, from DRM fdinfo",
        )
    )
    p.add_argument("--pid", type=whole, action="append", help="only this process (repeat for more)")
    p.set_defaults(func=_cmd_gpu_memory)

    p = sub.add_parser("firmware-version", help="version in a GuC/HuC blob's header (.bin or .bin.zst)")
    p.add_argument("path")
    p.add_argument("--json", action="store_true", help="print JSON (layout, major, minor, patch, build)")
    p.set_defaults(func=_cmd_firmware_version)

    p = sub.add_parser("guc-loaded", help="GuC/HuC versions the xe driver logged loading (kernel journal)")
    p.add_argument("--journal-file", metavar="FILE", help="read these kernel log lines instead of journalctl")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_guc_loaded)
