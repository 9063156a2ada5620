"""HTTP(S) requests that never hand a credential to another server. Stdlib only.

urllib follows a redirect with every header of the first request, Authorization included: a
server (or whoever answers for it) that redirects to another host would receive the API key.
Here a redirect to another origin (scheme, host or port) drops Authorization, Proxy-
Authorization and Cookie, and a redirect from https to http is refused outright.
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request

CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "cookie")


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


class _SameOriginCredentials(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is None:
            return None
        was, now = origin(req.full_url), origin(new.full_url)
        if was[0] == "https" and now[0] != "https":
            why = f"redirect from https to {now[0]} refused"
            raise urllib.error.HTTPError(newurl, code, why, headers, fp)
        if was != now:
            for name in list(new.headers):
                if name.lower() in CREDENTIAL_HEADERS:
                    del new.headers[name]
            for name in list(new.unredirected_hdrs):
                if name.lower() in CREDENTIAL_HEADERS:
                    del new.unredirected_hdrs[name]
        return new


_OPENER = urllib.request.build_opener(_SameOriginCredentials)


def credentials(url: str) -> str | None:
    """The user[:password] a URL carries (https://user:token@host/...), or None."""
    userinfo, at, _unused = urllib.parse.urlsplit(url).netloc.rpartition("@")
    return urllib.parse.unquote(userinfo) if at else None


def shown(url: str) -> str:
    """The URL as logs and messages may show it: its credentials replaced by ***."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


def request(url: str, headers: dict[str, str] | None = None) -> urllib.request.Request:
    """A GET of URL; credentials in it become a Basic Authorization header (urllib cannot take
    them in the URL), which never follows a redirect to another origin."""
    headers = dict(headers or {})
    userinfo = credentials(url)
    if userinfo is not None:
        parts = urllib.parse.urlsplit(url)
        url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        headers["Authorization"] = "Basic " + base64.b64encode(userinfo.encode()).decode()
    return urllib.request.Request(url, headers=headers)


def open_request(request: urllib.request.Request | str, timeout: float):
    """Open REQUEST (a URL or a Request) with credentials kept to the origin they were meant
    for: the one way arcops opens a URL."""
    return _OPENER.open(request, timeout=timeout)
