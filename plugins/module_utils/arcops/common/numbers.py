"""Numbers read from files and tools (probe verdicts, facts, bench results, a server's answers),
checked once: a number of the kind asked (whole or not), finite, within a range that makes
sense. Anything else is a NumberError naming where the number came from; never an
OverflowError, a float('inf') passed on, or a 5,000-digit integer printed.

Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

import math
import re

# The most tokens a context, a prompt or a batch can hold here: 16 Mi (vLLM's settings, the
# prove tools and the server answers they read all use this bound).
MAX_TOKENS = 2**24
# The most tokens a second any figure can claim: a billion (a bench or a tool saying more is broken).
MAX_RATE = 1e9
# A whole count of anything a box has (bytes, requests, resets): 2**63, a signed 64-bit counter.
MAX_COUNT = 2**63
_TEXT = re.compile(r"-?[0-9]{1,30}(?:\.[0-9]{1,30})?(?:[eE][-+]?[0-9]{1,3})?")


class NumberError(ValueError):
    """A number read from a file or a tool is missing, not a number, not finite or out of range."""


def shown(value: object) -> str:
    """A value in a message: numbers short (never all digits of a huge one), others by type."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        if value == MAX_COUNT:
            return "2^63"
        return str(value) if abs(value) < 10**30 else f"a {value.bit_length()}-bit integer"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value[:20] + ("..." if len(value) > 20 else ""))
    return f"a {type(value).__name__}"


def _range(low: float | None, high: float | None, value: float) -> str:
    if high is None or (high == MAX_COUNT and value <= high):  # the implicit bound goes unsaid
        return f"at least {shown(low)}"
    if low is None:
        return f"at most {shown(high)}"
    return f"from {shown(low)} to {shown(high)}"


def number(
    value: object, where: str, low: float | None = None, high: float | None = None, whole: bool = False
) -> float:
    """VALUE as a finite number within [LOW, HIGH] (an int when WHOLE), else NumberError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NumberError(f"{where} is {shown(value)}, not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise NumberError(f"{where} is {shown(value)}, not a finite number")
    if whole and isinstance(value, float):
        if not value.is_integer():
            raise NumberError(f"{where} is {shown(value)}, not a whole number")
        value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise NumberError(f"{where} is {shown(value)}, must be {_range(low, high, value)}")
    return value


def count(value: object, where: str, low: int = 0, high: int = MAX_COUNT) -> int:
    """A whole number from LOW to HIGH (by default any 64-bit count)."""
    return int(number(value, where, low, high, whole=True))


def from_text(
    text: str, where: str, low: float | None = None, high: float | None = None, whole: bool = False
) -> float:
    """A number written as text by a tool ('12', '-3.5', '1e3'); 30 digits at most."""
    if not isinstance(text, str) or not _TEXT.fullmatch(text.strip()):
        raise NumberError(f"{where} is {shown(text)}, not a number")
    return number(
        float(text) if not whole or "." in text or "e" in text.lower() else int(text), where, low, high, whole
    )


def finite_or_none(value: object) -> float | None:
    """VALUE as a float when it is a finite int or float (not a bool), else None: a figure read
    from a record that says nothing rather than something wrong."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None
