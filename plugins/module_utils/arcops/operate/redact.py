"""Secrets out of a diagnostics bundle: the values kept in the box's secret files (scrubbed
wherever they show up, byte for byte) and the shapes secrets take in text and argv:

- KEY=value, KEY: value and "key": "value" for API keys, tokens, secrets and passwords
  (quoted values whole, spaces and all; a name ending in _file, _path or _dir names a file, not
  a secret);
- flags: --api-key X, --api_key X, --api-key=X, --token X, --hf-token=X, ... quoted or not,
  and the argv list form of each ("--api-key", "X" in JSON, '--api-key', 'X' in Python);
- Authorization headers with any scheme (Bearer, Basic, Token, ApiKey, ...) or none, and a
  Bearer or ApiKey credential standing alone;
- credentials in URLs: https://user:password@host and https://TOKEN@host;
- Ansible vault blocks.

A secret file itself is never put in a bundle. Stdlib only.
"""

from __future__ import annotations

import re

from ..common.secrets import FLAG as _FLAG
from ..common.secrets import KEYWORD as _KEYWORD

MARK = "[REDACTED]"
# Where the roles keep secrets on a box by default (vllm_service's key env file, llama-server's
# key file); a box's records name any other (arcops.operate.diag reads them from there).
SECRET_PATHS = ("/etc/arcops/vllm/api-key.env", "/etc/arcops/llama-server.key")
# A known value shorter than this is scrubbed only where it stands as a whole word: a three-letter
# key must not blank every word that contains it. Shorter than MIN_KNOWN is never a key.
WHOLE_WORD_BELOW = 6
MIN_KNOWN = 3

_VALUE = r"""("[^"\n]*"|'[^'\n]*'|[^\s"',;\]\)\}]+)"""
# KEY=value / KEY: value / "key": "value": a name whose last part (or whole) is a keyword.
_NAMED = re.compile(
    rf"""(?ix)
    (?<![\w-])(?P<name>[a-z0-9_.-]*?{_KEYWORD}(?:[_.-][a-z0-9_.-]*)?)
    (?P<sep>["']?[ \t]*[=:][ \t]*)
    (?P<value>"[^"\n]*"|'[^'\n]*'|[^\s"',;\[\]\)\}}{{][^\s"',;\]\)\}}]*)
    """
)
_NOT_SECRET_NAME = re.compile(r"(?i)[_.-](?:file|path|dir|env[_-]file|url|type|count|len|length|limit)$")
# --flag VALUE, --flag=VALUE, and the argv list forms; --api-key-file and --max-tokens are not.
_FLAG_INLINE = re.compile(rf"(?i)({_FLAG})([ \t]*=[ \t]*|[ \t]+){_VALUE}")
_FLAG_LIST = re.compile(rf"""(?i)({_FLAG})(["'][ \t]*,[ \t]*)(["'])(.*?)(\3)""")
_AUTH = re.compile(
    r"""(?i)(\bAuthorization["']?[ \t]*[:=][ \t]*["']?)((?:[a-z][a-z0-9-]*[ \t]+)?)([^\s"',;]+)"""
)
_BEARER = re.compile(r"(?i)\b(Bearer|ApiKey)[ \t]+(?!\[REDACTED\])[A-Za-z0-9._~+/=-]+")
_URL = re.compile(r"(://)[^/\s@'\"]+@")
_VAULT = re.compile(r"\$ANSIBLE_VAULT;[^\n]*\n(?:[ \t]*[0-9a-fA-F]+[ \t]*(?:\n|$))+")


def secret_values(text: str) -> list[str]:
    """The values a secret file holds: each KEY=VALUE's value, or each non-empty line (quotes
    around a value dropped). Values under MIN_KNOWN characters are no key and left out."""
    values = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        value = line.split("=", 1)[1].strip() if "=" in line else line
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if len(value) >= MIN_KNOWN:
            values.append(value)
    return values


def _keep_quotes(value: str) -> str:
    """MARK in the value's own quotes (a JSON or YAML document stays parseable)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[0] + MARK + value[0]
    return MARK


class Redactor:
    def __init__(self, values: list[str]):
        # Longest first: a value that contains another is scrubbed whole.
        known = sorted({v for v in values if len(v) >= MIN_KNOWN}, key=len, reverse=True)
        self.values = [v for v in known if len(v) >= WHOLE_WORD_BELOW]
        self.short = [
            re.compile(rf"(?<![\w-]){re.escape(v)}(?![\w-])") for v in known if len(v) < WHOLE_WORD_BELOW
        ]
        self.count = 0

    def _sub(self, pattern: re.Pattern, repl, text: str) -> str:
        text, n = pattern.subn(repl, text)
        self.count += n
        return text

    def _named(self, m: re.Match) -> str:
        if _NOT_SECRET_NAME.search(m["name"]) or m["value"].strip("\"'") == MARK:
            return m[0]
        self.count += 1
        return m["name"] + m["sep"] + _keep_quotes(m["value"])

    def text(self, text: str) -> str:
        for value in self.values:
            if value in text:
                self.count += text.count(value)
                text = text.replace(value, MARK)
        for pattern in self.short:
            text = self._sub(pattern, MARK, text)
        text = self._sub(_VAULT, MARK + "\n", text)
        text = self._sub(_FLAG_LIST, lambda m: f"{m[1]}{m[2]}{m[3]}{MARK}{m[5]}", text)
        text = self._sub(_FLAG_INLINE, lambda m: m[1] + m[2] + _keep_quotes(m[3]), text)
        text = self._sub(_AUTH, lambda m: m[1] + m[2] + MARK, text)
        text = self._sub(_BEARER, lambda m: f"{m[1]} {MARK}", text)
        text = _NAMED.sub(self._named, text)
        return self._sub(_URL, r"\1" + MARK + "@", text)

    def data(self, data: bytes) -> bytes:
        """Binary data (a devcoredump): only the known values, byte for byte."""
        for value in self.values:
            raw = value.encode()
            if raw in data:
                self.count += data.count(raw)
                data = data.replace(raw, MARK.encode())
        for pattern in self.short:
            data, n = re.compile(pattern.pattern.encode()).subn(MARK.encode(), data)
            self.count += n
        return data
