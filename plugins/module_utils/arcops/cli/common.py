"""What every command group shares: one-line errors, the root to read under, argument types,
the parser class that says usage errors in one line."""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..common.inputs import open_input
from ..common.sysroot import SysRoot


def flat(text: str) -> str:
    """TEXT on one line that cannot steer a terminal: an input named in a message may hold line
    breaks, escape codes, bidi controls or bytes that were not UTF-8 (as lone surrogates)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))


def one_line(e: BaseException) -> str:
    return flat(str(e)) or type(e).__name__


def error(text: object) -> None:
    """Say TEXT on stderr, on one line."""
    sys.stderr.write(flat(str(text)) + "\n")


def read_root(args: argparse.Namespace) -> SysRoot:
    root = SysRoot(args.root)
    root.check()
    return root


@contextmanager
def kernel_log(path: str) -> Iterator[io.TextIOWrapper]:
    """A kernel log file's lines as text, streamed (undecodable bytes replaced)."""
    with open_input(path, "kernel log") as raw:
        yield io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


class Parser(argparse.ArgumentParser):
    """Usage errors on one line (exit 2), naming the command and pointing at its --help."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


# ASCII digits only: int() and float() also take "1_0", " 12 " and other scripts' digits ("١٢").
_WHOLE = re.compile(r"[+-]?[0-9]{1,18}")
_NUMBER = re.compile(r"[+-]?([0-9]{1,18}([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]{1,3})?|[+-]?(inf|nan)", re.I)


def whole(text: str) -> int:
    """A whole number written in ASCII digits (at most 18 of them)."""
    if not _WHOLE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{flat(repr(text[:40]))} is not a whole number")
    return int(text)


def number(text: str) -> float:
    """A number written in ASCII (nan and inf pass: the caller's range check names them)."""
    if not _NUMBER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{flat(repr(text[:40]))} is not a number")
    return float(text)


def positive_int(text: str) -> int:
    value = whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def _number(text: str, zero_ok: bool) -> float:
    import math

    value = number(text)
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise argparse.ArgumentTypeError(f"{text} is not a {'' if zero_ok else 'positive, '}finite number")
    return value


def finite(text: str) -> float:
    return _number(text, zero_ok=False)


def seconds(text: str) -> float:
    return _number(text, zero_ok=True)


def with_root(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--root (read sysfs/procfs under it) and --json, for the hardware readers."""
    p.add_argument("--root", default="/", help="filesystem root to read sysfs/procfs under (fixture trees)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def with_box_source(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--root and --journal-file: where a box's records, sysfs and kernel lines are read
    (operate metrics and operate report read the same)."""
    p.add_argument("--root", default="/", help="filesystem root to read records, sysfs and procfs under")
    p.add_argument("--journal-file", metavar="FILE", help="read these kernel log lines instead of journalctl")
    return p
