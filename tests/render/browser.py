"""Headless Chromium driven through the DevTools protocol over a pipe (no websocket, no package).

``--remote-debugging-pipe`` makes Chromium read protocol messages from file descriptor 3 and write
its answers to descriptor 4, each a JSON text ended by a NUL byte
(https://chromedevtools.github.io/devtools-protocol/). Enough of it to open a page at a given
width, read the layout of its elements (``getBoundingClientRect``) and take screenshots; the page
itself runs no script of its own (the report's Content-Security-Policy forbids them), the
measuring expressions are evaluated by the protocol.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = next(
    (path for path in (shutil.which("chromium"), "/usr/bin/chromium") if path and os.path.exists(path)), None
)


class Browser:
    def __init__(self, profile: Path, timeout: float = 120.0):
        assert CHROMIUM is not None
        to_child, from_parent = os.pipe()
        from_child, to_parent = os.pipe()
        # Chromium wants the pipe on descriptors 3 and 4: move ours out of the way first.
        child_in = fcntl.fcntl(to_child, fcntl.F_DUPFD_CLOEXEC, 10)
        child_out = fcntl.fcntl(to_parent, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_child)
        os.close(to_parent)
        self.process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
                "--disable-extensions",
                "--force-color-profile=srgb",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=lambda: (os.dup2(child_in, 3), os.dup2(child_out, 4)),
        )
        os.close(child_in)
        os.close(child_out)
        self.writer, self.reader = from_parent, from_child
        self.buffer, self.counter, self.timeout = b"", 0, timeout
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Page.enable", session=True)

    def send(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self.counter += 1
        message: dict[str, Any] = {"id": self.counter, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.writer, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self.buffer:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Chromium did not answer {method}")
                chunk = os.read(self.reader, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe during {method}")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.counter:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def open(self, url: str, width: int, height: int = 900) -> None:
        """Load ``url`` in a window ``width`` CSS pixels wide (a phone's when narrow)."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=width < 600,
        )
        self.send("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + self.timeout
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load")
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        reply = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in reply:
            raise RuntimeError(reply["exceptionDetails"])
        return reply["result"].get("value")

    def screenshot(self, clip: dict[str, float] | None = None) -> bytes:
        """A PNG of the page (all of it, or ``clip``: x, y, width, height in page pixels)."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if clip is not None:
            params["clip"] = {**clip, "scale": 1}
        return base64.b64decode(self.send("Page.captureScreenshot", session=True, **params)["data"])

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.writer)
        os.close(self.reader)
