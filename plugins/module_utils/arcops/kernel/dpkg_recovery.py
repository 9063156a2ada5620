"""A dpkg run cut off half-way (the control node died, the box lost power): find it, and the one
call that finishes it, before a role installs anything.

apt-get refuses to install while dpkg's journal holds an unfinished run ("dpkg was interrupted,
you must manually run 'dpkg --configure -a'"), so a role's next install would fail on a box that
a cut-off run left behind. dpkg keeps that journal as files with numeric names in
/var/lib/dpkg/updates/ (what apt-get itself looks for), and `dpkg --audit` names the packages
left unpacked or half-configured. Either one means the box needs `dpkg --configure -a`. A
package whose unpack was cut off (half-installed) is not configured by it: dpkg's query shows it
not installed, so the role installs it again from its file.
"""

from __future__ import annotations

import re

UPDATES_DIR = "/var/lib/dpkg/updates"
AUDIT_ARGV = ["dpkg", "--audit"]
# Conffile questions answered without a prompt (the box's own edits kept): nobody is there to ask.
CONFIGURE_ARGV = ["dpkg", "--configure", "-a", "--force-confdef", "--force-confold"]
LOCK_TIMEOUT_MAX = 3600

_LOCKED = re.compile(r"lock\S* (?:was |is )?locked by another process|could not get lock", re.IGNORECASE)


def pending_journal(names: list[str]) -> list[str]:
    """The entries of UPDATES_DIR that are dpkg's journal of an unfinished run (numeric names)."""
    return sorted(n for n in names if n.isascii() and n.isdigit())


def audit_packages(text: str) -> list[str]:
    """Package names `dpkg --audit` lists (each on a line of its own, indented by one space)."""
    names = []
    for line in text.splitlines():
        if line.startswith(" ") and not line.startswith("  ") and line.strip():
            name = line.split()[0]
            if name not in names:
                names.append(name)
    return names


def reasons(journal: list[str], audited: list[str]) -> list[str]:
    """Why the box needs `dpkg --configure -a`, a line each; empty when dpkg finished its last run."""
    out = []
    if journal:
        out.append(f"dpkg's journal holds {len(journal)} unfinished update(s) in {UPDATES_DIR}")
    if audited:
        shown = ", ".join(audited[:5]) + (f" and {len(audited) - 5} more" if len(audited) > 5 else "")
        out.append(f"dpkg --audit lists {len(audited)} package(s) left part-way: {shown}")
    return out


def locked(stderr: str) -> bool:
    """Whether dpkg or apt gave up because another process holds its lock (worth waiting for)."""
    return bool(_LOCKED.search(stderr))


def failure_line(stderr: str, stdout: str) -> str:
    """The line that says why dpkg failed: its first error, else its last words."""
    lines = [line.strip() for line in (stderr.strip() or stdout.strip()).splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["no output"])[0 if errors else -1]
