"""GRUB menu entries and boot files for a kernel release, read from grub.cfg and /boot.

grub-set-default takes an entry path of ids, "SUBMENU_ID>ENTRY_ID", e.g.
"gnulinux-advanced-UUID>gnulinux-6.17.0-1009-intel-advanced-UUID"; ids survive a re-run of
update-grub, titles are locale-dependent. Used before a reboot (is the kernel bootable?) and
to pin the default entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from ..common.sysroot import SysRoot

_OPEN_RE = re.compile(
    r"^\s*(?P<kind>submenu|menuentry)\s+(?P<quote>['\"])(?P<title>.*?)(?P=quote)(?P<rest>.*)\{\s*$"
)
_ID_RE = re.compile(r"\$menuentry_id_option\s+'(?P<id>[^']+)'")


@dataclass
class BootEntry:
    release: str
    vmlinuz: bool
    initrd: bool
    entry_path: str | None  # for grub-set-default; None when grub.cfg has no entry
    entry_title: str | None
    saved_entry: str | None  # what grubenv says the default is
    initrd_stale: list[str] = field(default_factory=list)  # inputs changed after the initrd was built

    @property
    def bootable(self) -> bool:
        return self.vmlinuz and self.initrd and self.entry_path is not None

    def as_dict(self) -> dict:
        return {**asdict(self), "bootable": self.bootable}


def find_entry(grub_cfg: Iterable[str], release: str) -> tuple[str, str] | None:
    """(entry path, title) of the versioned, non-recovery entry that boots vmlinuz-RELEASE.

    The top-level "simple" entry boots whatever kernel is newest, so it never pins a release:
    only an entry whose id or title names the release counts.
    """
    stack: list[tuple[str, str]] = []  # (kind, id) of open blocks
    current: tuple[str, str] | None = None
    depth_of_entry = None
    linux_re = re.compile(rf"^\s*linux\s+\S*/vmlinuz-{re.escape(release)}(\s|$)")
    for line in grub_cfg:
        m = _OPEN_RE.match(line)
        if m:
            id_match = _ID_RE.search(m["rest"])
            ident = id_match["id"] if id_match else m["title"]
            stack.append((m["kind"], ident))
            names_release = release in ident or release in m["title"]
            if m["kind"] == "menuentry" and names_release and "recovery" not in m["title"]:
                current, depth_of_entry = (ident, m["title"]), len(stack)
            continue
        if line.strip() == "}" and stack:
            if depth_of_entry == len(stack):
                current = depth_of_entry = None
            stack.pop()
            continue
        if current and linux_re.match(line):
            path = ">".join(ident for kind, ident in stack[:-1] if kind == "submenu")
            return ((path + ">" if path else "") + current[0], current[1])
    return None


def saved_entry(grubenv: str | None) -> str | None:
    for line in (grubenv or "").splitlines():
        if line.startswith("saved_entry="):
            return line.split("=", 1)[1]
    return None


# A kernel release as `uname -r` prints it and /boot names its files (7.2.0-070200-generic).
RELEASE = re.compile(r"[0-9]+[.][0-9]+[0-9A-Za-z.+~_-]{0,100}")


def changed_since_initrd(sysroot: SysRoot, release: str, inputs: Iterable[str]) -> list[str]:
    """The INPUTS (host paths, e.g. firmware blobs the initramfs carries) changed after RELEASE's
    initrd was last built: their ctime is later than the initrd's mtime. ctime, because any write
    or rename sets it and no copy that keeps times can set it back. A run cut off between a
    blob's copy and the initramfs rebuild leaves such a blob, and the next run's copy changes
    nothing: this is how that run knows. No initrd yet: nothing to rebuild (installing the kernel
    builds it); an input that is not there has not changed."""
    try:
        built = sysroot.path(f"/boot/initrd.img-{release}").stat().st_mtime_ns
    except OSError:
        return []
    changed = []
    for host_path in inputs:
        try:
            if sysroot.path(host_path).stat().st_ctime_ns > built:
                changed.append(host_path)
        except OSError:
            continue
    return changed


def boot_entry(
    sysroot: SysRoot, release: str, grub_cfg: str = "/boot/grub/grub.cfg", initrd_inputs: Iterable[str] = ()
) -> BootEntry:
    """vmlinuz, initrd and GRUB's entry for RELEASE, and which INITRD_INPUTS changed since the
    initrd was built; ValueError when it is not a release."""
    if not RELEASE.fullmatch(release):
        raise ValueError(f"release {release[:40]!r} is not a kernel release like 7.2.0-070200-generic")
    found = find_entry((sysroot.read(grub_cfg) or "").splitlines(), release)
    return BootEntry(
        release=release,
        vmlinuz=sysroot.path(f"/boot/vmlinuz-{release}").is_file(),
        initrd=sysroot.path(f"/boot/initrd.img-{release}").is_file(),
        entry_path=found[0] if found else None,
        entry_title=found[1] if found else None,
        saved_entry=saved_entry(sysroot.read("/boot/grub/grubenv")),
        initrd_stale=changed_since_initrd(sysroot, release, initrd_inputs),
    )
