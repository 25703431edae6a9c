#!/usr/bin/env python3
"""examples/live_view.html in a real browser (Debian's Chromium, driven by Playwright) against a
running `convoy view`.

Opens the page with ?ws=URL, waits (bounded) until window.convoyView has decoded at least one
/scene with agents in it and drawn at least one camera image (--expect scene,image, the default;
`map`: and drawn a /map of triangles), writes a screenshot PNG to the path given, and prints one JSON summary (the page's convoyView, the status line, where the map and
camera canvases are in the screenshot, console errors).
Exit status: 0 on success, 1 on a page error or a missing browser, 2 on timeout.

    python tests/interop/view_browser.py --ws ws://127.0.0.1:8765 --screenshot target/view.png

Playwright's own browser download is not used: the browser is --chromium (default
/usr/bin/chromium, Debian's `chromium` package, which scripts/setup.sh installs).
"""

import argparse
import json
import time
import os
import sys
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[2]
# What the page must have shown before it counts as ready, by --expect name.
READY = {
    "scene": "v.scenes >= 1 && v.agents.length >= 1",
    "image": "v.images >= 1",
    "map": "v.mapTriangles >= 1 && v.mapDraws >= 1",
}


def ready(expect):
    """The page's ready condition, as a function for Playwright's wait_for_function."""
    checks = " && ".join(READY[e] for e in expect) or "true"
    return f"() => {{ const v = window.convoyView; return !!v && {checks}; }}"


def state(page):
    """The page's counters and status line, and where its two canvases are in the full-page
    screenshot (CSS pixels; the device pixel ratio is 1), as far as they can be read."""
    try:
        return page.evaluate("""() => {
          const rect = (id) => {
            const r = document.getElementById(id).getBoundingClientRect();
            return { x: Math.round(r.x + scrollX), y: Math.round(r.y + scrollY),
                     width: Math.round(r.width), height: Math.round(r.height) };
          };
          return {
            view: window.convoyView ? JSON.parse(JSON.stringify(window.convoyView)) : null,
            status: document.getElementById('status')?.textContent,
            canvases: { map: rect('map'), image: rect('image') },
            devicePixelRatio: window.devicePixelRatio,
          };
        }""")
    except PlaywrightError as e:
        return {"view": None, "status": f"page not readable: {e}"}


def measure(page, seconds):
    """Images received and drawn, and scenes drawn, per second over `seconds` (wall clock, this process)."""
    count = ("() => [window.convoyView.received, window.convoyView.images, "
             "window.convoyView.scenes, window.convoyView.drawMs]")
    before = page.evaluate(count)
    t0 = time.monotonic()
    page.wait_for_timeout(seconds * 1000)  # the measurement window itself, not a wait for a state
    after = page.evaluate(count)
    elapsed = time.monotonic() - t0
    rate = lambda i: round((after[i] - before[i]) / elapsed, 2)
    return {"seconds": round(elapsed, 2), "images_received_per_s": rate(0),
            "images_drawn_per_s": rate(1), "scenes_per_s": rate(2),
            "ms_per_image_drawn": round((after[3] - before[3]) / max(after[1] - before[1], 1), 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ws", default="ws://127.0.0.1:8765", help="the live view's address")
    parser.add_argument("--screenshot", required=True, help="PNG to write")
    parser.add_argument("--page", default=str(REPO / "examples/live_view.html"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait")
    parser.add_argument("--expect", default="scene,image",
                        help=f"what the page must show, of {', '.join(READY)} (comma-separated)")
    parser.add_argument("--settle", type=float, default=0.0, metavar="SECONDS",
                        help="once ready, wait this long before the screenshot")
    parser.add_argument("--measure", type=float, default=0.0, metavar="SECONDS",
                        help="once ready, count the images the page draws for this long "
                             "(the live-view benchmark, docs/BENCHMARKS.md)")
    args = parser.parse_args()
    expect = [e for e in args.expect.split(",") if e]
    unknown = set(expect) - set(READY)
    if unknown:
        parser.error(f"--expect: unknown {sorted(unknown)}")

    out = {"ok": False, "ws": args.ws, "screenshot": args.screenshot}
    if not os.access(args.chromium, os.X_OK):
        out["error"] = (f"no browser at {args.chromium}: install Debian's chromium "
                        "(apt-get install chromium; scripts/setup.sh does)")
        print(json.dumps(out))
        print(f"view_browser: {out['error']}", file=sys.stderr)
        sys.exit(1)

    url = Path(args.page).resolve().as_uri() + "?ws=" + args.ws
    console_errors, page_errors = [], []
    status = 1
    with sync_playwright() as p:
        # --no-sandbox: the suite runs as root, where Chromium's sandbox refuses to start.
        browser = p.chromium.launch(executable_path=args.chromium, headless=True,
                                    args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 800})
            page.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
            page.on("pageerror", lambda e: page_errors.append(str(e)))
            page.goto(url)
            try:
                page.wait_for_function(ready(expect), timeout=args.timeout * 1000, polling=100)
                status = 0
                if args.measure > 0:
                    out["measured"] = measure(page, args.measure)
                if args.settle > 0:
                    page.wait_for_timeout(args.settle * 1000)  # let the picture move on
            except PlaywrightTimeout:
                status = 2
                out["error"] = (f"within {args.timeout} s the page did not show "
                                f"{' and '.join(expect)}")
            Path(args.screenshot).parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=args.screenshot, full_page=True)
            out.update(state(page))
        finally:
            browser.close()
    if page_errors and status == 0:
        status = 1
        out["error"] = f"uncaught errors in the page: {page_errors}"
    if status == 0 and out.get("view", {}).get("errors"):
        status = 1
        out["error"] = f"the page reported errors: {out['view']['errors']}"
    out["ok"] = status == 0
    out["url"] = url
    out["console_errors"] = console_errors
    out["page_errors"] = page_errors
    print(json.dumps(out, sort_keys=True))
    if status:
        print(f"view_browser: {out.get('error')}", file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
