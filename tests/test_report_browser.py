"""The report page in a real browser: headless Chromium driven over the DevTools protocol (CDP).

A report is built from the hand-made study of ``tests/test_report.py`` (its ``results``
fixture) and opened in headless Chromium. The page must load with no console error and no
uncaught exception, every ``<img>`` must be complete and decoded (``naturalWidth > 0``), and
the page must not be wider than the window (wide tables scroll in their own box). Further
tests break the page on purpose (a deleted PNG, a corrupt embedded image, a script error) and
check that the checker reports each, so a passing run means something.

Chromium is a system package: ``make sysdeps`` installs it (Debian ``chromium``); without
it these tests fail with that advice rather than skip. The CDP client is ``websocket-client``
(the ``dev`` extra).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from test_report import results  # noqa: F401 - the study fixture, shared with the report tests

from fattorus import report

START_TIMEOUT_S = 60.0  # a cold Chromium on a busy 2-core machine takes seconds, not minutes
CALL_TIMEOUT_S = 60.0
WINDOW = (1000, 800)  # CSS pixels; narrower than the runs table, so that table must scroll in its box
IMAGES_JS = """
Promise.all(Array.from(document.images, (img, i) => {
  const name = (img.closest('figure') || {}).id || img.getAttribute('src').slice(0, 40) || String(i);
  const seen = ok => ({name, ok, complete: img.complete, width: img.naturalWidth, height: img.naturalHeight});
  return img.decode().then(() => seen(true), () => seen(false));
}))
"""
LAYOUT_JS = """
({page: document.documentElement.scrollWidth, window: window.innerWidth,
  boxes: Array.from(document.querySelectorAll('.scroll'),
                    b => ({table: b.firstElementChild.className, scroll: b.scrollWidth, client: b.clientWidth,
                           right: b.getBoundingClientRect().right}))})
"""


class CdpError(RuntimeError):
    """The browser answered a DevTools command with an error."""


def chromium_binary() -> str:
    """Path of the Chromium binary, or a test failure that says how to install it."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("headless-Chromium report test: no `chromium` binary on PATH; run `make sysdeps` "
                "(as root it installs the Debian package chromium)", pytrace=False)  # fmt: skip


def websocket_module():
    try:
        import websocket
    except ImportError:
        pytest.fail("headless-Chromium report test needs websocket-client: `make setup` "
                    "(pip install -e '.[dev]')", pytrace=False)  # fmt: skip
    return websocket


class Browser:
    """One headless Chromium process and a CDP connection to it (flat sessions, one per page)."""

    def __init__(self, binary: str, profile: Path, window: tuple[int, int] = WINDOW) -> None:
        self.profile = profile
        self.log = profile.parent / "chromium.log"
        args = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
                f"--user-data-dir={profile}", f"--window-size={window[0]},{window[1]}", "--no-first-run",
                "--no-default-browser-check", "--disable-dev-shm-usage", "about:blank"]  # fmt: skip
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.events: list[dict[str, Any]] = []
        self.next_id = 0
        try:
            self.ws = websocket_module().create_connection(self._endpoint(), timeout=CALL_TIMEOUT_S,
                                                           suppress_origin=True)  # fmt: skip
        except BaseException:
            self.close()
            raise

    def _endpoint(self) -> str:
        """The browser's CDP WebSocket URL, from ``DevToolsActivePort`` (port line, then path line)."""
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"chromium exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            lines = port_file.read_text().split() if port_file.exists() else []
            if len(lines) >= 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            time.sleep(0.1)
        pytest.fail(f"chromium wrote no DevToolsActivePort in {START_TIMEOUT_S:.0f} s: {self.log.read_text()[-2000:]}")

    def _receive(self) -> dict[str, Any]:
        return json.loads(self.ws.recv())

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept in :attr:`events`."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            reply = self._receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str, timeout_s: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        """The first event ``method`` of ``session`` (already received or arriving within ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout_s:.0f} s")
            self.events.append(self._receive())

    def evaluate(self, expression: str, session: str) -> Any:
        """Value of a JavaScript expression in the page (promises awaited); a thrown error fails the test."""
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True}, session)  # fmt: skip
        if "exceptionDetails" in result:
            raise CdpError(f"evaluating in the page: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self) -> None:
        if getattr(self, "ws", None) is not None:
            self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def page_errors(events: list[dict[str, Any]], session: str) -> list[str]:
    """Console errors, failed loads and uncaught exceptions among ``events`` of one page, as text."""
    errors = []
    for event in (e for e in events if e.get("sessionId") == session):
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            errors.append(f"uncaught exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append("console." + params["type"] + ": " + " ".join(str(a.get("value", a.get("description")))
                                                                       for a in params.get("args", [])))  # fmt: skip
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            errors.append(f"console error: {entry.get('text')} {entry.get('url', '')}".strip())
    return errors


def inspect_page(browser: Browser, page: Path, width: int | None = None) -> dict[str, Any]:
    """Open ``page`` in a fresh tab (``width`` CSS pixels wide, else the window's); return its errors,
    its images' decode state and its layout widths."""
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    try:
        for domain in ("Runtime", "Log", "Page"):
            browser.call(f"{domain}.enable", session=session)
        if width is not None:
            metrics = {"width": width, "height": WINDOW[1], "deviceScaleFactor": 1, "mobile": False}
            browser.call("Emulation.setDeviceMetricsOverride", metrics, session)
        nav = browser.call("Page.navigate", {"url": page.resolve().as_uri()}, session)
        assert "errorText" not in nav, nav
        browser.wait_event("Page.loadEventFired", session)
        images = browser.evaluate(IMAGES_JS, session)
        layout = browser.evaluate(LAYOUT_JS, session)
        browser.evaluate("new Promise(r => setTimeout(r, 200))", session)  # late console messages
        return {"errors": page_errors(browser.events, session), "images": images, "layout": layout}
    finally:
        browser.call("Target.closeTarget", {"targetId": target})


def problems(seen: dict[str, Any], expected_images: int) -> list[str]:
    """What is wrong with an inspected page: errors, missing or undecoded images, a page wider than the window."""
    found = list(seen["errors"])
    if len(seen["images"]) != expected_images:
        found.append(f"{len(seen['images'])} images, expected {expected_images}")
    found += [f"image {i['name']} not decoded (naturalWidth {i['width']})" for i in seen["images"]
              if not (i["ok"] and i["complete"] and i["width"] > 0)]  # fmt: skip
    layout = seen["layout"]
    if layout["page"] > layout["window"]:
        found.append(f"page {layout['page']} px wide in a {layout['window']} px window")
    return found


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    binary = chromium_binary()
    chrome = Browser(binary, tmp_path_factory.mktemp("chromium") / "profile")
    yield chrome
    chrome.close()


@pytest.fixture
def built(results: Path) -> Path:  # noqa: F811 - the imported study fixture
    """``report.html`` of the hand-made study."""
    out = results / "out"
    assert report.main([str(results), "--out", str(out)]) == 0
    return out / "report.html"


def test_report_page_loads_clean_in_chromium(browser: Browser, built: Path):
    seen = inspect_page(browser, built)
    assert problems(seen, len(report.FIGURES)) == []
    assert [i["name"] for i in seen["images"]] == [stem for stem, _ in report.FIGURES]
    assert all(i["width"] > 200 and i["height"] > 150 for i in seen["images"])
    runs_box = next(b for b in seen["layout"]["boxes"] if b["table"] == "runs")
    # The runs table is wider than the window: it scrolls inside its box, which stays on the page.
    assert runs_box["scroll"] > runs_box["client"] and runs_box["right"] <= seen["layout"]["window"]


def test_narrow_window_tables_scroll_in_their_boxes(browser: Browser, built: Path):
    """In a phone-width window Table I is wider than the page too: it scrolls in its box, the page does not."""
    seen = inspect_page(browser, built, width=480)
    assert problems(seen, len(report.FIGURES)) == []
    boxes = {b["table"]: b for b in seen["layout"]["boxes"]}
    assert boxes["table1"]["scroll"] > boxes["table1"]["client"] and boxes["runs"]["scroll"] > boxes["runs"]["client"]


def _link_images_to_files(page: Path) -> None:
    """Point every ``<img>`` at its PNG file beside the page instead of the embedded copy."""
    text = re.sub(r'<figure id="(\w+)"><img alt="([^"]*)" src="data:image/png;base64,[A-Za-z0-9+/=]+"',
                  r'<figure id="\1"><img alt="\2" src="\1.png"', page.read_text())  # fmt: skip
    assert text.count('.png"') == len(report.FIGURES)
    page.write_text(text)


def test_checker_reports_a_deleted_png(browser: Browser, built: Path):
    _link_images_to_files(built)
    assert problems(inspect_page(browser, built), len(report.FIGURES)) == []  # the files are there
    (built.parent / "fig8_utilization.png").unlink()
    found = problems(inspect_page(browser, built), len(report.FIGURES))
    assert any("image fig8_utilization not decoded" in p for p in found), found
    assert any("fig8_utilization.png" in p for p in found), found  # the failed load is a console error
    assert not any("fig7" in p or "fig9" in p or "fig10" in p for p in found), found


def test_checker_reports_a_corrupt_embedded_image(browser: Browser, built: Path):
    text = built.read_text()
    prefix = 'src="data:image/png;base64,'
    start = text.index(prefix, text.index('id="fig9_makespan"')) + len(prefix)
    garbage = base64.b64encode(b"\x89PNG\r\n\x1a\n not really a png").decode()
    end = text.index('"', start)
    built.write_text(text[:start] + garbage + text[end:])
    found = problems(inspect_page(browser, built), len(report.FIGURES))
    assert any("image fig9_makespan not decoded" in p for p in found), found


def test_checker_reports_script_errors_and_a_wide_page(browser: Browser, built: Path):
    text = built.read_text().replace(
        "</body>", "<script>console.error('bad thing')</script><div style='width:5000px'>wide</div>"
                   "<script>throw new Error('boom')</script></body>")  # fmt: skip
    built.write_text(text)
    found = problems(inspect_page(browser, built), len(report.FIGURES))
    assert any("console.error: bad thing" in p for p in found), found
    assert any("uncaught exception" in p and "boom" in p for p in found), found
    assert any("px wide in a" in p for p in found), found
