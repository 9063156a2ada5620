"""xe hang events in kernel log lines: engine resets, timed-out jobs, GT resets, GPU page faults.

Lines come from the kernel journal, with a journal prefix ("2026-11-30T14:00:00+0000 host kernel: ",
``journalctl -o short``), without one (``-o cat``, dmesg's "[ 12.345678] "), or as the journal's
JSON export (``-o json``, one entry per line). Only the kernel's own messages count: a JSON entry
whose _TRANSPORT is not "kernel", or a text line whose journal prefix names another process
("host myapp[42]: xe 0000:..."), is a user-space line that only looks like the driver's, and is
no event (the lines a multi-line entry continues with belong to the entry they follow). A text
line cannot tell `logger -t kernel` from the kernel: the JSON export, or `journalctl -k` (what
arcops reads itself), can. Everything here streams: it reads one line at a time and never holds
a whole log.

The messages, as the xe driver prints them (drivers/gpu/drm/xe). Every one of them goes through
xe_gt_printk (xe_gt_printk.h), which prefixes "Tile%u: GT%u: " (older kernels: only "GT%u: ") to
drm_dev_printk's "xe 0000:29:00.0: [drm] " (drm_err adds "*ERROR* " after "[drm] "):

- engine_reset, xe_guc_submit.c xe_guc_exec_queue_reset_handler(), xe_gt_info:
    "Engine reset: engine_class=%s, logical_mask: 0x%x, guc_id=%d"
- timedout_job, xe_guc_submit.c guc_exec_queue_timedout_job(), xe_gt_notice (older: drm_notice,
  so no Tile/GT prefix; before lrc_seqno was added, no lrc_seqno):
    "Timedout job: seqno=%u, lrc_seqno=%u, guc_id=%d, flags=0x%lx in %s [%d]"   (newer kernels)
    "Timedout job: seqno=%u, lrc_seqno=%u, guc_id=%d, flags=0x%lx"
    "Timedout job: seqno=%u, guc_id=%d, flags=0x%lx"
- gt_reset / gt_reset_failed, xe_gt.c gt_reset():
    xe_gt_info(gt, "reset started\\n")          -> gt_reset
    xe_gt_info(gt, "reset done\\n")             -> not an event: the end of the reset already counted
    xe_gt_err(gt, "reset failed (%pe)\\n", ...) -> gt_reset_failed (the device is then wedged)
  ("trying reset from %ps" and "reset queued" come before "reset started" and are not counted.)
- page_fault, xe_pagefault.c xe_pagefault_queue_work() (xe_gt_pagefault.c before it), xe_gt_info:
    "Fault response: Unsuccessful %pe"   e.g. "Fault response: Unsuccessful -EINVAL"
  It follows the multi-line fault dump xe_pagefault_print() logs ("\\n\\tASID: %d\\n\\tFaulted
  Address: 0x%08x%08x\\n\\tFaultType: ..."), whose continuation lines carry no xe prefix; the
  "Fault response" line is the one counted, once per unresolved fault. Older kernels logged both
  at debug level only (drm_dbg "Fault response: Unsuccessful %d"): the number is accepted too.

Not counted: "Engine memory CAT error ..." is xe_gt_dbg (debug output) upstream; the GuC treats
it as an engine reset, and the timed-out job it leads to is logged at notice level and counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field

ENGINE_RESET, TIMEDOUT_JOB, GT_RESET, GT_RESET_FAILED, PAGE_FAULT = (
    "engine_reset",
    "timedout_job",
    "gt_reset",
    "gt_reset_failed",
    "page_fault",
)
KINDS = (ENGINE_RESET, TIMEDOUT_JOB, GT_RESET, GT_RESET_FAILED, PAGE_FAULT)
# What counts as a reset (fleet status' column, the reports, the metrics' alert rules).
RESET_KINDS = (ENGINE_RESET, GT_RESET)

# "xe 0000:29:00.0: [drm] *ERROR* Tile0: GT0: <message>": anywhere in the line, so any journal
# prefix (short, short-iso, dmesg's "[ 12.345678] ") is skipped.
_PREFIX_RE = re.compile(
    r"\bxe (?P<device>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): \[drm\] (?:\*ERROR\* )?"
    r"(?:Tile(?P<tile>\d+): )?(?:GT(?P<gt>\d+): )?(?P<message>.*)"
)
_MESSAGES = [
    (
        ENGINE_RESET,
        re.compile(
            r"^Engine reset: engine_class=(?P<engine_class>\w+), "
            r"logical_mask: (?P<logical_mask>0x[0-9a-f]+), guc_id=(?P<guc_id>\d+)"
        ),
    ),
    (
        TIMEDOUT_JOB,
        re.compile(
            r"^Timedout job: seqno=(?P<seqno>\d+), (?:lrc_seqno=(?P<lrc_seqno>\d+), )?"
            r"guc_id=(?P<guc_id>\d+), flags=(?P<flags>0x[0-9a-f]+)(?: in (?P<process>.*) \[(?P<pid>-?\d+)\])?"
        ),
    ),
    (GT_RESET, re.compile(r"^reset started\s*$")),
    (GT_RESET_FAILED, re.compile(r"^reset failed \((?P<error>[^)]*)\)")),
    (PAGE_FAULT, re.compile(r"^Fault response: Unsuccessful (?P<error>-?\w+)")),
]
_INT_FIELDS = {"guc_id", "seqno", "lrc_seqno", "pid"}


@dataclass(frozen=True)
class Event:
    kind: str
    device: str  # PCI address of the GPU, "0000:29:00.0"
    gt: int | None  # None when the message carries no GT prefix (older drm_notice lines)
    detail: dict = field(default_factory=dict)
    line: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        what = ", ".join(f"{k}={v}" for k, v in self.detail.items())
        gt = f" GT{self.gt}" if self.gt is not None else ""
        return f"xe {self.kind} on {self.device}{gt}" + (f" ({what})" if what else "")


def parse_line(line: str) -> Event | None:
    """The xe hang event in one kernel log line, or None for any other line."""
    if "xe " not in line:
        return None
    m = _PREFIX_RE.search(line)
    if m is None:
        return None
    message = m["message"]
    for kind, pattern in _MESSAGES:
        found = pattern.match(message)
        if found is None:
            continue
        detail = {
            k: (int(v) if k in _INT_FIELDS else v) for k, v in found.groupdict().items() if v is not None
        }
        gt = int(m["gt"]) if m["gt"] is not None else None
        return Event(kind, m["device"], gt, detail, line.rstrip("\n"))
    return None


# The kernel's printk time at the end of a journal prefix ("kernel: [ 12.345678] ") or alone (dmesg).
_PRINTK_TIME = re.compile(r"\[\s*\d+\.\d+\]\s*$")


def _identifier(words: list[str]) -> str | None:
    """The first of WORDS ending in a colon: a journal line's identifier ("kernel:", "myapp[42]:")."""
    return next((word for word in words if word.endswith(":")), None)


def from_kernel(prefix: str) -> bool:
    """Whether the text before an xe message names the kernel as its source: no prefix or a printk
    time (dmesg, -o cat), or a journal prefix whose identifier is "kernel:". A process's
    ("myapp[42]:", "logger:") or anything else is not."""
    prefix = _PRINTK_TIME.sub("", prefix).strip()
    return not prefix or _identifier(prefix.split()) == "kernel:"


def _source_is_kernel(entry: str) -> bool:
    """Whether a text line (an entry's first line) is the kernel's."""
    m = _PREFIX_RE.search(entry) if "xe " in entry else None
    if m is not None:
        return from_kernel(entry[: m.start()])
    if entry.startswith("["):  # dmesg: the kernel's ring only
        return True
    found = _identifier(entry.split(None, 6)[:6])
    return found is None or found == "kernel:"  # none: a bare message (-o cat of journalctl -k)


def json_message(line: str) -> tuple[bool, str]:
    """A journal JSON entry: (whether the kernel logged it, its MESSAGE as text)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return False, ""
    message = entry.get("MESSAGE") if isinstance(entry, dict) else None
    if isinstance(message, list):  # journald's form for a message that is not UTF-8: its bytes
        try:
            message = bytes(message).decode("utf-8", "replace")
        except (TypeError, ValueError):
            return False, ""
    if not isinstance(message, str):
        return False, ""
    return entry.get("_TRANSPORT") == "kernel", message


def _kernel_xe_lines(lines: Iterable[str]) -> Iterator[str]:
    """The kernel's own message lines among LINES (text or JSON export, mixed) that may hold an xe
    event. Cheap per line: most lines are dropped by a substring test."""
    entry = ""  # the first line of the entry that indented continuation lines belong to
    for line in lines:
        if line[:1] == "{":
            kernel, message = json_message(line)
            if kernel and "xe " in message:
                yield from message.splitlines()
            entry = ""
            continue
        for part in line.splitlines() if "\n" in line[:-1] or "\r" in line else (line,):
            if part[:1].isspace():  # how journalctl shows the further lines of one entry
                if "xe " in part and _source_is_kernel(entry):
                    yield part
                continue
            entry = part
            if "xe " in part and _source_is_kernel(part):
                yield part


def events(lines: Iterable[str]) -> Iterator[Event]:
    """The xe hang events in kernel log lines, streamed: only the kernel's own lines count."""
    for message in _kernel_xe_lines(lines):
        event = parse_line(message)
        if event is not None:
            yield event


def count(lines: Iterable[str]) -> dict:
    """Events per kind and per device: {"total", "by_kind": {kind: n}, "by_device": {address: {kind: n}}}."""
    by_kind = dict.fromkeys(KINDS, 0)
    by_device: dict[str, dict[str, int]] = {}
    total = 0
    for event in events(lines):
        total += 1
        by_kind[event.kind] += 1
        per = by_device.setdefault(event.device, dict.fromkeys(KINDS, 0))
        per[event.kind] += 1
    return {"total": total, "by_kind": by_kind, "by_device": by_device}
