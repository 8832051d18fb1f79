"""How long the browser tests' page visits take, and whether narrowing a page stands for loading it narrow.

    python benchmarks/browser_visits.py [--html BUILT_HTML] [--compare] [CHAPTER ...]

BUILT_HTML is a built site (default ``_build/html``; build it with
``jupyter-book build . -W -n --keep-going``). Every page the browser tests open (or the CHAPTERs named)
is visited offline in Debian's chromium as ``tests/test_browser.py`` visits it: loaded at 1280 px, its
facts collected, then narrowed to 390 px and collected again. The seconds each visit takes are printed.
With ``--compare`` each page is also loaded afresh at 390 px (and at 1280 px), and every fact the tests
check that differs between the fresh page and the visited one is printed (the errors log aside, which a
fresh page starts empty): none should, or the tests' one-load visit misses what a phone reader sees.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import os
import platform
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from test_browser import (CHAPTERS, CHROMIUM, DESKTOP_WIDTH, FLAGS, PHONE_WIDTH, _QuietHandler,  # noqa: E402
                          visit, visit_fresh)

#: Facts that are a log of the page's life rather than of what it shows: a fresh page starts them anew.
LOGS = {"errors", "blocked"}


def differences(visited: dict, fresh: dict) -> list[str]:
    return [f"{key}: visited {visited.get(key)!r:.200} | fresh {fresh.get(key)!r:.200}"
            for key in sorted(set(visited) | set(fresh) - LOGS) if key not in LOGS and visited.get(key) != fresh.get(key)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--html", default=str(ROOT / "_build" / "html"))
    parser.add_argument("chapters", nargs="*", default=CHAPTERS)
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    built = Path(args.html)
    handler = functools.partial(_QuietHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"Chromium ({CHROMIUM}) on {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    total, differing = 0.0, 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for chapter in args.chapters:
            start = time.perf_counter()
            visited = visit(browser, site, built, chapter)
            seconds = time.perf_counter() - start
            total += seconds
            line = f"{chapter:<24} {seconds:5.1f} s"
            if args.compare:
                found = [f"{width} px {d}" for width in (DESKTOP_WIDTH, PHONE_WIDTH)
                         for d in differences(visited[width], visit_fresh(browser, site, built, chapter, width))]
                differing += bool(found)
                line += "  same facts as fresh pages" if not found else "\n    " + "\n    ".join(found)
            print(line, flush=True)
        browser.close()
    print(f"{len(args.chapters)} pages in {total:.1f} s" +
          (f"; {differing} differ from a fresh load" if args.compare else ""))


if __name__ == "__main__":
    main()
