"""Headless Chromium (Debian's package, which scripts/bootstrap installs) driven by Playwright
(PyPI's, launched by the browser's path: Playwright's own browser download is not reachable).
A page is opened from a file and every console error and request it makes is kept."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
# What the machines' Chromium needs headless as root with no network: no sandbox (root), no GPU,
# and none of its own background connections (refused here, many at a time).
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]


@dataclass
class Opened:
    page: object
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def chromium_path() -> str | None:
    return CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")


def launch(playwright):
    return playwright.chromium.launch(executable_path=chromium_path(), args=ARGS)


def open_file(browser, path: Path, width: int = 1100, height: int = 900) -> Opened:
    """path in a new page of width x height CSS pixels, once it has loaded."""
    page = browser.new_page(viewport={"width": width, "height": height})
    opened = Opened(page)
    page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.on("request", lambda r: opened.requests.append(r.url))
    page.goto(path.resolve().as_uri(), wait_until="load")
    return opened


def overflows(opened: Opened) -> bool:
    """The page is wider than the window (a sideways scroll of the whole page)."""
    return opened.page.evaluate("document.documentElement.scrollWidth > document.documentElement.clientWidth")
