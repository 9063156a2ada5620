"""Secrets out of a diagnostics bundle: the values kept in the box's secret files (scrubbed
wherever they show up, byte for byte) and the shapes secrets take in text (KEY=value for API
keys, tokens, secrets and passwords; Authorization headers; --api-key arguments; user:password@
in URLs; Ansible vault blocks).

A secret file itself is never put in a bundle. Stdlib only.
"""

from __future__ import annotations

import re

MARK = "[REDACTED]"
# Where the roles keep secrets on a box (vllm_service's key env file, llama-server's key file).
SECRET_PATHS = ("/etc/arcops/vllm/api-key.env", "/etc/arcops/llama-server.key")
_NAMED = re.compile(
    r"(?i)(\b[A-Z0-9_.-]*(?:API[_-]?KEY|TOKEN|SECRET|PASSWORD|PASSWD)[A-Z0-9_.-]*[\"']?\s*[=:]\s*[\"']?)"
    r"([^\s\"',;\[][^\s\"',;]*)"
)
_BEARER = re.compile(r"(?i)\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+")
_ARG = re.compile(r"(?i)(--(?:api-key|token|password)[= ]+)(\S+)")
_URL = re.compile(r"(://)[^/\s:@]+:[^/\s@]+@")
_VAULT = re.compile(r"\$ANSIBLE_VAULT;[^\n]*\n(?:[ \t]*[0-9a-fA-F]+[ \t]*(?:\n|$))+")


def secret_values(text: str) -> list[str]:
    """The values a secret file holds: each KEY=VALUE's value, or each non-empty line. Short
    values (under 6 characters) are left out: scrubbing them would blank ordinary words."""
    values = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        value = line.split("=", 1)[1].strip().strip("\"'") if "=" in line else line
        if len(value) >= 6:
            values.append(value)
    return values


class Redactor:
    def __init__(self, values: list[str]):
        # Longest first: a value that contains another is scrubbed whole.
        self.values = sorted(set(values), key=len, reverse=True)
        self.count = 0

    def text(self, text: str) -> str:
        for value in self.values:
            if value in text:
                self.count += text.count(value)
                text = text.replace(value, MARK)
        for pattern, repl in (
            (_VAULT, MARK + "\n"),
            (_NAMED, r"\1" + MARK),
            (_BEARER, r"\1 " + MARK),
            (_ARG, r"\1" + MARK),
            (_URL, r"\1" + MARK + "@"),
        ):
            text, n = pattern.subn(repl, text)
            self.count += n
        return text

    def data(self, data: bytes) -> bytes:
        """Binary data (a devcoredump): only the known values, byte for byte."""
        for value in self.values:
            raw = value.encode()
            if raw in data:
                self.count += data.count(raw)
                data = data.replace(raw, MARK.encode())
        return data
