"""Browser-test fixtures: the built frontend bundle, Debian's Chromium driven by Playwright, pages.

Playwright's sync API runs an event loop in the test thread, so Django's async-safety check is
switched off for these tests (the ORM calls run in that thread while no loop code touches them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import playwright
import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
DIST = FRONTEND / "dist" / "hatlab"
BUNDLE_FILES = (
    "kinds/highlight.js",
    "kinds/highlight.css",
    "charts.js",
    "hatlab.css",
    "site.css",
    "machine.css",
)
OUTPUT = Path(__file__).resolve().parent / "output"
CHROMIUM = os.environ.get("HATLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# Chromium majors the pinned Playwright drives: its own build's major and the four before it (Chrome stable
# and Debian's Chromium trail Playwright's build by a few majors). Debian's chromium is not pinned: its
# security archive keeps only the newest release, so a pin would stop installing; it is checked instead.
CHROMIUM_MAJORS_BEHIND = 4


def playwright_chromium_major() -> int:
    """The major version of the Chromium build the installed Playwright was released with."""
    browsers = Path(playwright.__file__).parent / "driver" / "package" / "browsers.json"
    entry = next(b for b in json.loads(browsers.read_text())["browsers"] if b["name"] == "chromium")
    return int(entry["browserVersion"].split(".")[0])


def chromium_major(executable: str) -> int:
    output = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"(\d+)\.\d+\.\d+", output)
    if match is None:
        pytest.fail(f"`{executable} --version` printed no version: {output!r}", pytrace=False)
    return int(match.group(1))


def check_chromium_version(executable: str) -> None:
    """Fail, saying what to do, when ``executable`` is outside the majors the pinned Playwright drives."""
    found, supported = chromium_major(executable), playwright_chromium_major()
    if found > supported:
        pytest.fail(
            f"Chromium {found} at {executable} is newer than Playwright {version('playwright')}'s Chromium "
            f"{supported}: raise playwright in pyproject.toml's dev extra to a release whose Chromium is "
            f">= {found}, then `make lock` (or point HATLAB_CHROMIUM at a Chromium {supported}).",
            pytrace=False,
        )
    if found < supported - CHROMIUM_MAJORS_BEHIND:
        pytest.fail(
            f"Chromium {found} at {executable} is older than Playwright {version('playwright')} drives "
            f"({supported - CHROMIUM_MAJORS_BEHIND} to {supported}): `apt-get update && apt-get install -y "
            "chromium` (Debian's security archive has the current one), or point HATLAB_CHROMIUM at one.",
            pytrace=False,
        )


def _newest_source_mtime() -> float:
    sources = [p for p in (FRONTEND / "src").rglob("*") if p.is_file()]
    sources += [FRONTEND / name for name in ("build.mjs", "package.json", "package-lock.json")]
    return max(p.stat().st_mtime for p in sources if p.exists())


def bundle_is_stale() -> bool:
    """Whether ``frontend/dist/hatlab`` lacks a bundle or any built file is older than a source
    (``build.mjs`` is a source: a new entry there makes the bundle stale)."""
    if not all((DIST / name).exists() for name in BUNDLE_FILES):
        return True
    built = [p for p in DIST.iterdir() if p.is_file()]
    return min(p.stat().st_mtime for p in built) < _newest_source_mtime()


def _run(command: list[str]) -> None:
    result = subprocess.run(command, cwd=FRONTEND, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail(
            f"`{' '.join(command)}` failed in {FRONTEND} (exit {result.returncode}):\n"
            f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def frontend_bundle() -> Path:
    """The built bundle; runs ``npm run build`` (after ``npm ci`` when needed) if it is stale."""
    if bundle_is_stale():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail(
                "The frontend bundle (frontend/dist/hatlab) is missing or older than its sources and "
                "npm is not installed: install Node.js 20+ with npm, then run `npm ci && npm run build` "
                "in frontend/.",
                pytrace=False,
            )
        if not (FRONTEND / "node_modules" / ".bin" / "esbuild").exists():
            _run([npm, "ci", "--no-audit", "--no-fund"])
        _run([npm, "run", "build"])
    return DIST


@pytest.fixture(scope="session")
def chromium(frontend_bundle) -> Iterator:
    """Debian's Chromium, launched once per session."""
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"No Chromium at {CHROMIUM}: install Debian's (`apt-get install -y chromium`) or point "
            "HATLAB_CHROMIUM at one.",
            pytrace=False,
        )
    check_chromium_version(CHROMIUM)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_context(chromium) -> Iterator:
    """A fresh desktop browser context (own cookies) per test."""
    context = chromium.new_context(viewport={"width": 1100, "height": 900}, locale="en-US")
    context.set_default_timeout(10_000)
    yield context
    context.close()


@pytest.fixture
def mobile_context(chromium) -> Iterator:
    """A phone-sized touch context (is_mobile, has_touch) per test."""
    context = chromium.new_context(
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
        locale="en-US",
    )
    context.set_default_timeout(10_000)
    yield context
    context.close()


@pytest.fixture
def output_dir(request) -> Path:
    """``tests/browser/output/<test name>/`` for screenshots (git-ignored)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    path = OUTPUT / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def start_invite(page, url: str) -> None:
    """Open an invite link and press its start button, as the invitee does (a GET binds nothing)."""
    page.goto(url)
    with page.expect_navigation():
        page.locator("[data-invite-start] button").click()
