"""Open an `eval --report` page in headless Chromium (Debian's, driven by Selenium) and check
what a reader would see: the page renders, every chart is present and drawn (non-empty,
with marks inside its plot), the tables have rows, the browser logged no console error, and
the page fetched nothing. With --screenshot, saves a picture of the page.

    python report_check.py report.html [--screenshot out.png] [--charts a,b,...]
"""

import argparse
import pathlib
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHARTS = ["risk-coverage", "threshold", "reliability", "template-accuracy"]


def browser(chromium, driver):
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900"):
        options.add_argument(flag)
    # Every console message the page causes, errors included, is kept for get_log.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))


def check(page, charts, screenshot, chromium, driver):
    failures = []
    web = browser(chromium, driver)
    try:
        web.get(page.resolve().as_uri())
        title = web.title
        if not title.startswith("switchyard"):
            failures.append(f"title is {title!r}")
        for name in charts:
            found = web.execute_script(
                """
                const svg = document.querySelector(`svg[data-chart="${arguments[0]}"]`);
                if (!svg) return null;
                const box = svg.getBoundingClientRect();
                const marks = [...svg.querySelectorAll('path.series, rect.bar, circle.marker')]
                  .map(e => e.getBBox()).filter(b => b.width > 0 || b.height > 0);
                return {width: box.width, height: box.height, marks: marks.length};
                """,
                name,
            )
            if found is None:
                failures.append(f"chart {name}: missing")
            elif found["width"] < 100 or found["height"] < 100 or found["marks"] == 0:
                failures.append(f"chart {name}: empty ({found})")
            else:
                print(f"report-check: chart {name}: {found['width']:.0f}x{found['height']:.0f} px, {found['marks']} marks")
        rows = web.execute_script("return document.querySelectorAll('table tr td').length")
        if rows == 0:
            failures.append("no table has a row")
        fetched = web.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        if fetched:
            failures.append(f"the page fetched {fetched}")
        errors = [e for e in web.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
        if errors:
            failures.append(f"console errors: {errors}")
        if screenshot:
            height = web.execute_script("return document.body.scrollHeight")
            web.set_window_size(1200, min(max(height, 900), 2400))
            web.save_screenshot(str(screenshot))
            print(f"report-check: screenshot {screenshot}")
    finally:
        web.quit()
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("page", type=pathlib.Path)
    parser.add_argument("--screenshot", type=pathlib.Path)
    parser.add_argument("--charts", default=",".join(CHARTS))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--driver", default="/usr/bin/chromedriver")
    args = parser.parse_args()
    failures = check(args.page, args.charts.split(","), args.screenshot, args.chromium, args.driver)
    for failure in failures:
        print(f"report-check: FAILED: {failure}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"report-check: {args.page} renders, every chart drawn, no console error, nothing fetched")


if __name__ == "__main__":
    main()
