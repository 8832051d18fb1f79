"""How long the sliders' charts take to redraw in Chromium: the median per chart, per width.

    python benchmarks/chart_redraw.py [BUILT_HTML] [--moves N]

BUILT_HTML is a built site (default ``_build/html``; build it with
``jupyter-book build . -W -n --keep-going``). Every chapter with a chart is opened offline in Debian's
chromium at 1280 and 390 px; each slider is moved N times (default 60) to random positions of its grid
(the input's value set and its input event fired, as a key press does) and the time from the input event to the drawn chart, which
``_ext/vega_charts.py`` keeps, is reported as median, 90th percentile and maximum, with the machine it
ran on.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import os
import platform
import random
import statistics
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from test_browser import CHROMIUM, FLAGS, _QuietHandler  # noqa: E402
from test_browser_charts import PAGES, chart_sliders, open_chapter  # noqa: E402

#: A move: the slider's input set to a position and its input event fired, as a key press does.
MOVE_JS = """([i, k, value]) => {
  const input = window.rl4llmCharts[i].box.querySelectorAll('.vega-bind input')[k];
  const n = window.rl4llmCharts[i].redraws.length;
  input.value = value;
  input.dispatchEvent(new Event('input', {bubbles: true}));
  return n;
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("html", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--moves", type=int, default=60)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=args.html)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"Chromium ({CHROMIUM}) on {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"{args.moves} moves per slider")
    rng = random.Random(0)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for name, (chapter, index) in PAGES.items():      # every chart of the book, its sliders (a marker last)
            sliders = chart_sliders(name)
            for width in (1280, 390):
                context, page, _ = open_chapter(browser, site, chapter, width)
                times = []
                for k, s in enumerate(sliders):
                    value = s.default
                    for _ in range(args.moves):         # each move to another position than the last
                        value = float(rng.choice([v for v in s.values if v != value]))
                        n = page.evaluate(MOVE_JS, [index, k, value])
                        page.wait_for_function("([i, n]) => window.rl4llmCharts[i].redraws.length > n",
                                               arg=[index, n])
                    times = page.evaluate(f"() => window.rl4llmCharts[{index}].redraws")
                times.sort()
                print(f"{name:<30} {width:>4} px  {'x'.join(str(s.positions) for s in sliders):>10} positions  "
                      f"redraw median {statistics.median(times):5.1f} ms, p90 {times[int(0.9 * len(times))]:5.1f} ms, "
                      f"max {times[-1]:5.1f} ms ({len(times)} moves)")
                context.close()
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main()
