"""`pebrel view` in a real headless Chromium, as a person would use it (#21 item 4): log in with
the printed link, see a pane's text after pane.run and its colours (computed styles), see a
pane appear in the inbox when a program asks for approval and leave it when answered, and a
request without the cookie refused. A screenshot of the page is saved beside the test's
files (``view.png`` in its tmp_path).

Needs Playwright's Python package and Debian's ``chromium`` (``.ci/run`` installs both); the
tests skip, saying so, when either is missing."""

from __future__ import annotations

import base64
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runtime, at_prompt
from tests.e2e.test_view import EMITTER, view

pytestmark = pytest.mark.timeout(120)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def browser() -> Any:
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (shutil.which found no binary)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def test_a_person_logs_in_sees_text_colours_and_the_inbox(
    runtime: Runtime, tmp_path: Path, browser: Any
) -> None:
    at_prompt(runtime)
    runtime.run(1, r"printf '\033[1;31mBROWSER-RED\033[0m \033[42mON-GREEN\033[0m\n'")
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    fifo = tmp_path / "commands"
    os.mkfifo(fifo)
    at_prompt(runtime, split["pane_id"])
    command = f"{sys.executable} {EMITTER} --fifo {fifo}"
    runtime.ok("pane.prompt", {"pane_id": split["pane_id"], "text": command})
    with open(fifo, "w") as pipe, view(runtime) as served:
        url = f"http://127.0.0.1:{served.port}{served.login_path}"
        page = browser.new_page(viewport={"width": 1400, "height": 800})
        page.goto(url)
        red = page.locator(".row span", has_text="BROWSER-RED").last
        red.wait_for(timeout=15_000)
        assert red.text_content() == "BROWSER-RED"
        assert red.evaluate("e => getComputedStyle(e).color") == "rgb(204, 51, 51)"
        assert int(red.evaluate("e => getComputedStyle(e).fontWeight")) >= 700
        green = page.locator(".row span", has_text="ON-GREEN").last
        assert green.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(78, 154, 6)"
        assert page.locator("#inbox li").count() == 0

        msg = base64.b64encode(b"Deploy to prod?").decode()
        pipe.write(f"7501 state=blocked:kind=permission:msg={msg}\n")
        pipe.flush()
        entry = page.locator("#inbox li")
        entry.first.wait_for(timeout=15_000)
        assert "Deploy to prod?" in entry.first.text_content()
        assert f"pane 1:{split['pane_id']}" in entry.first.text_content()
        entry.first.click()  # finds the pane: it flashes
        page.locator(f"#pane-1-{split['pane_id']}.flash").wait_for(timeout=5_000)
        page.screenshot(path=str(tmp_path / "view.png"))

        pipe.write("7501 state=working\n")
        pipe.flush()
        page.locator("#inbox li").first.wait_for(state="detached", timeout=15_000)

        # Without the cookie (a fresh browser context): refused.
        stranger = browser.new_context().new_page()
        response = stranger.goto(f"http://127.0.0.1:{served.port}/")
        assert response is not None and response.status == 403
        assert (tmp_path / "view.png").stat().st_size > 10_000


def test_with_allow_input_a_clicked_pane_takes_what_is_typed(
    runtime: Runtime, browser: Any
) -> None:
    at_prompt(runtime)
    runtime.run(1, "echo ready-for-typing")
    with view(runtime, "--allow-input") as served:
        page = browser.new_page(viewport={"width": 1200, "height": 700})
        page.goto(f"http://127.0.0.1:{served.port}{served.login_path}")
        page.locator(".row span", has_text="ready-for-typing").last.wait_for(timeout=15_000)
        page.locator("#pane-1-1 .screen").click()
        page.locator("#pane-1-1.typing").wait_for(timeout=5_000)
        page.keyboard.type("echo from-the-browser")
        page.keyboard.press("Enter")
        runtime.wait_text(1, "\nfrom-the-browser")
        page.locator(".row span", has_text="from-the-browser").last.wait_for(timeout=15_000)
