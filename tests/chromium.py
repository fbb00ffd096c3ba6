"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages ending in a NUL byte on file descriptors 3 and 4), with the standard library alone: open a page
at a window size, evaluate JavaScript in it after layout, type into it, take a screenshot. tests/test_docs.py
looks at the built site with it (its equations laid out, its code blocks' lines whole, its search from disk).

``scripts/setup.sh`` installs Chromium (Debian's ``chromium``) when run as root; elsewhere the tests
that need it skip and say why, unless SIMULATOR_REQUIRE_CHROMIUM=1 (``.ci/run`` sets it).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

NAMES = ("chromium", "chromium-headless-shell", "chrome-headless-shell", "chromium-browser", "google-chrome")


def executable() -> str | None:
    """The first Chromium found on PATH (or CHROMIUM=/path/to/it), else None."""
    if os.environ.get("CHROMIUM"):
        return shutil.which(os.environ["CHROMIUM"])
    return next((found for name in NAMES if (found := shutil.which(name))), None)


def _high(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium and one tab; ``with Browser() as b: b.open(url, 1280, 900); b.evaluate(js)``."""

    def __init__(self, exe: str | None = None, timeout: float = 30):
        self.timeout, self._id, self._events = timeout, 0, []
        exe = exe or executable()
        if exe is None:
            raise FileNotFoundError("no Chromium on PATH (" + ", ".join(NAMES) + ")")
        # the pipes' descriptors moved above 9, so that none of them is the 3 or 4 the browser expects
        to_browser, self._write, self._read, from_browser = (_high(fd) for fd in (*os.pipe(), *os.pipe()))
        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        flags = ["--headless", "--remote-debugging-pipe", "--disable-gpu", "--hide-scrollbars",
                 "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                 f"--user-data-dir={self._profile}", "about:blank"]
        # no --allow-file-access-from-files: a page opened from disk may do here only what it may in a reader's
        # browser (its search, which a file:// page could otherwise fetch and start a worker for, is tested so)
        if os.geteuid() == 0:
            flags.insert(0, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        # the protocol's pipe is the browser's descriptors 3 (it reads) and 4 (it writes)
        self._process = subprocess.Popen(
            ["bash", "-c", f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser} {to_browser}<&- {from_browser}>&-',
             exe, *flags], pass_fds=(to_browser, from_browser),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)

    # ---- the protocol ----
    def _message(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: bool = False, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._message()
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self._events.append(answer)

    def _wait_for(self, event: str) -> None:
        while True:
            if any(e.get("method") == event for e in self._events):
                self._events = [e for e in self._events if e.get("method") != event]
                return
            self._events.append(self._message())

    # ---- what the tests use ----
    def open(self, url: str, width: int, height: int) -> None:
        """Load ``url`` in a window ``width`` × ``height`` CSS pixels and wait for its load event."""
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        self._events = [e for e in self._events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", session=True, url=url)
        self._wait_for("Page.loadEventFired")

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (JSON-serialisable)."""
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def type(self, text: str) -> None:
        """Type ``text`` into the focused element, as a keyboard would (its input events fire)."""
        self.call("Input.insertText", session=True, text=text)

    def screenshot(self, path: Path, full_page: bool = False) -> None:
        """A PNG of the window (or of the whole page) as laid out now."""
        params = {"format": "png"}
        if full_page:
            width, height = self.evaluate("[document.documentElement.scrollWidth, "
                                          "document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
        Path(path).write_bytes(base64.b64decode(self.call("Page.captureScreenshot", session=True, **params)["data"]))

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._read)
        os.close(self._write)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
