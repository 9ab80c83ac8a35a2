"""The HTML report in a real browser: build `snakemake --report`, open it in headless Chromium,
screenshot the first page and every figure, and check that every figure and table is there.

Run after a default run, from the repository root:

    python bench/report_screenshots.py [--out bench/out/report] [--report report.html]

Needs Debian's `chromium` (apt-get install chromium). Chromium is driven through its DevTools
protocol over a WebSocket; the few lines of client below use the standard library only.
Exit status 1 (with the missing names) when a figure or table of the default targets is not in
the report or an image does not render.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
]
WINDOW = (1600, 1000)  # pixels: a laptop screen's browser window
NAVBAR_WIDTH = 540  # the report's menu column at that width, measured on a screenshot


class DevTools:
    """A minimal Chrome DevTools Protocol client: one page, text frames, no extensions."""

    def __init__(self, ws_url: str):
        host_port, path = ws_url.removeprefix("ws://").split("/", 1)
        host, port = host_port.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(4096)
        if b" 101 " not in response.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"DevTools WebSocket refused: {response[:200]!r}")
        self.buffer = response.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0

    def _send(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        if len(payload) < 126:
            header += bytes([0x80 | len(payload)])
        elif len(payload) < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("DevTools connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _receive(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack(">H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self._read(8))[0]
            message += self._read(length)
            if first & 0x80:  # FIN
                return message.decode()

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self._send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self._receive())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def evaluate(self, expression: str):
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"JavaScript failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(data["data"]))


def expected_outputs() -> list[str]:
    """Every output the rules mark with `report(...)` that this run made (wildcards expanded
    over the datasets in results/); the overview and the findings page are always expected."""
    declared = []
    for rules in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        declared += re.findall(r'report\(\s*"([^"]+)"', rules.read_text())
    datasets = [p.parent.parent.name for p in (ROOT / "results").glob("*/figures")]
    expected = {"results/figures/overview.png", "results/findings.md"}
    for path in declared:
        for name in datasets if "{dataset}" in path else [None]:
            concrete = path.replace("{dataset}", name) if name else path
            if (ROOT / concrete).exists():
                expected.add(concrete)
    return sorted(expected)


def wait_for(devtools: DevTools, expression: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not devtools.evaluate(expression):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {expression}")
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "report"))
    parser.add_argument("--report", default=None, help="an existing report (default: build one)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("chromium not found: apt-get install chromium", file=sys.stderr)
        return 2

    report = Path(args.report) if args.report else out / "report.html"
    if not args.report:
        began = time.monotonic()
        subprocess.run(["snakemake", "--report", str(report)], cwd=ROOT, check=True)
        print(f"report built in {time.monotonic() - began:.1f} s: {report}")

    profile = tempfile.mkdtemp(prefix="report-chromium-")
    browser = subprocess.Popen(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    problems = []
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or browser.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.2)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as response:
            pages = [t for t in json.load(response) if t["type"] == "page"]
        devtools = DevTools(pages[0]["webSocketDebuggerUrl"])
        devtools.call("Page.enable")
        devtools.call("Page.navigate", url=report.resolve().as_uri())
        wait_for(devtools, "typeof app !== 'undefined' && document.querySelector('#app') !== null")
        time.sleep(1.0)
        devtools.screenshot(out / "00-first-page.png")
        in_report = devtools.evaluate("Object.keys(results)")
        categories = devtools.evaluate("categories")
        print(f"report: {len(in_report)} results in categories {sorted(categories)}")
        for expected in expected_outputs():
            if expected not in in_report:
                problems.append(f"not in the report: {expected}")
        for number, category in enumerate(categories, start=1):
            devtools.evaluate(f"app.showCategory({json.dumps(category)}); true")
            time.sleep(0.5)
            devtools.screenshot(out / f"{number:02d}-category-{category.replace(' ', '_')}.png")
        images = [p for p in in_report if p.endswith(".png")]
        oversized = []
        for number, path in enumerate(images, start=1):
            devtools.evaluate(
                # the category too, so the breadcrumb names the figure's own section
                f"((path) => {{ const category = Object.keys(categories).find(c => "
                "Object.values(categories[c]).some(paths => paths.includes(path))); "
                "app.setView({content: 'img', navbarMode: 'resultinfo', category: category, "
                f"contentPath: results[path].data_uri, resultPath: path}}); return true; }})"
                f"({json.dumps(path)})"
            )
            wait_for(devtools, "document.querySelector('#app img[src^=\"data:\"]') !== null")
            wait_for(devtools, "[...document.images].every(i => i.complete)")
            width = devtools.evaluate(
                "Math.max(...[...document.querySelectorAll('#app img')].map(i => i.naturalWidth))"
            )
            if not width:
                problems.append(f"image does not render: {path}")
            height = devtools.evaluate(
                "Math.max(...[...document.querySelectorAll('#app img')].map(i => i.naturalHeight))"
            )
            # the report centres an image in a flex box: a figure taller or wider than the
            # window loses its top or left edge, out of reach of the scroll bar. The window
            # grows to the figure, so the screenshot shows all of it; the figure's size is
            # reported, as a reader with a smaller window sees it clipped
            if height > WINDOW[1] or width > WINDOW[0] - NAVBAR_WIDTH:
                oversized.append(f"{path}: {width} x {height} px")
            devtools.call(
                "Emulation.setDeviceMetricsOverride",
                width=max(WINDOW[0], NAVBAR_WIDTH + width + 80),
                height=max(WINDOW[1], height + 80),
                deviceScaleFactor=1,
                mobile=False,
            )
            time.sleep(0.3)
            name = path.replace("results/", "").replace("/", "_")
            devtools.screenshot(out / f"fig-{number:02d}-{name}")
            devtools.call("Emulation.clearDeviceMetricsOverride")
        print(f"{len(images)} figures rendered; screenshots in {out}")
        for line in oversized:
            print(f"larger than a {WINDOW[0]} x {WINDOW[1]} window beside the menu: {line}")
    finally:
        browser.terminate()
        browser.wait(timeout=30)
        shutil.rmtree(profile, ignore_errors=True)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
