"""Addresses: where a box reaches a service of its own that listens on an address."""

from __future__ import annotations

import urllib.parse

# A wildcard listen address answers on loopback.
WILDCARD = {"0.0.0.0": "127.0.0.1", "::": "::1"}


def url_host(address: str) -> str:
    """An address as a URL's or a port mapping's host part: an IPv6 address in brackets."""
    return f"[{address}]" if ":" in address else address


def local_host(listen: str) -> str:
    """The host part of a URL by which the box reaches a service listening on LISTEN."""
    return url_host(WILDCARD.get(listen, listen))


def local_url(url: str) -> str:
    """URL with a wildcard host (http://0.0.0.0:8080) made the loopback address that answers for it."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if host not in WILDCARD:
        return url
    netloc = local_host(host) + (f":{parts.port}" if parts.port is not None else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
