#!/usr/bin/env python3
"""Draw the scale table (`switchyard bench --synthetic ... --json`) as one SVG file.

Three panels against the number of templates (log scale): route p50 and p95 on one thread,
embedding included, beside the exact scan's p50; load from the artifact's bytes (read and
router's tables); resident memory. The issue's bars (5 ms p50, 1 s load) are dashed lines.
Only the Python standard library: the SVG is written by hand.

Usage:

    switchyard --templates templates/clinc150 bench --dataset tests/data/clinc150/val.jsonl \\
        --queries 300 --synthetic 100,1000,10000,20000,50000,100000 --json > scale.json
    python3 infra/scripts/plot_scale.py scale.json docs/scale.svg --title "2-core Intel Xeon"
"""

import argparse
import html
import json
import math
import sys
from pathlib import Path

WIDTH, HEIGHT = 300, 220  # one panel
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 30, 40
COLOURS = {"route": "#1f77b4", "p95": "#9ecae1", "exact": "#d62728", "load": "#2ca02c",
           "read": "#98df8a", "memory": "#9467bd", "bar": "#555555"}


def read_rows(path: Path) -> list:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"{path}: {e}")
    rows = report.get("synthetic") if isinstance(report, dict) else None
    if not rows:
        sys.exit(f"{path}: no `synthetic` rows (run `bench --synthetic N,N,... --json`)")
    needed = ("templates", "load_ms", "read_ms", "router_ms", "resident_mb", "route_ms",
              "exact_route_ms", "top1_agreement")
    for number, row in enumerate(rows, 1):
        missing = [k for k in needed if k not in row]
        if missing:
            sys.exit(f"{path}: synthetic row {number} lacks {', '.join(missing)}")
    return sorted(rows, key=lambda r: r["templates"])


class Panel:
    """One chart: log-scale templates across, linear values up."""

    def __init__(self, x0: float, title: str, unit: str, xs: list, top: float):
        self.x0, self.title, self.unit = x0, title, unit
        self.lo, self.hi = math.log10(min(xs)), math.log10(max(xs))
        self.top = top
        self.parts = []

    def x(self, templates: float) -> float:
        span = (self.hi - self.lo) or 1.0
        return self.x0 + LEFT + (math.log10(templates) - self.lo) / span * (WIDTH - LEFT - RIGHT)

    def y(self, value: float) -> float:
        return TOP + (1 - value / self.top) * (HEIGHT - TOP - BOTTOM)

    def axes(self, xs: list) -> None:
        x_left, x_right = self.x0 + LEFT, self.x0 + WIDTH - RIGHT
        y_bottom = HEIGHT - BOTTOM
        self.parts.append(f'<text x="{self.x0 + WIDTH / 2}" y="16" text-anchor="middle" '
                          f'font-weight="bold">{self.title}</text>')
        self.parts.append(f'<line x1="{x_left}" y1="{y_bottom}" x2="{x_right}" y2="{y_bottom}" stroke="black"/>')
        self.parts.append(f'<line x1="{x_left}" y1="{TOP}" x2="{x_left}" y2="{y_bottom}" stroke="black"/>')
        for t in xs:
            label = f"{t // 1000}k" if t >= 1000 else str(t)
            self.parts.append(f'<text x="{self.x(t):.1f}" y="{y_bottom + 14}" text-anchor="middle" '
                              f'font-size="10">{label}</text>')
        self.parts.append(f'<text x="{self.x0 + WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle" '
                          'font-size="10">templates</text>')
        for i in range(5):
            value = self.top * i / 4
            self.parts.append(f'<text x="{x_left - 4}" y="{self.y(value) + 3:.1f}" text-anchor="end" '
                              f'font-size="10">{value:g}</text>')
        self.parts.append(f'<text x="{self.x0 + 10}" y="{TOP - 8}" font-size="10">{self.unit}</text>')

    def line(self, points: list, colour: str, label: str, row: int, dashed: bool = False) -> None:
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        path = " ".join(f"{self.x(t):.1f},{self.y(v):.1f}" for t, v in points)
        self.parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for t, v in points if not dashed else []:
            self.parts.append(f'<circle cx="{self.x(t):.1f}" cy="{self.y(v):.1f}" r="2.5" fill="{colour}"/>')
        legend_y = TOP + 4 + 12 * row
        legend_x = self.x0 + LEFT + 8
        self.parts.append(f'<line x1="{legend_x}" y1="{legend_y}" x2="{legend_x + 14}" y2="{legend_y}" '
                          f'stroke="{colour}" stroke-width="2"{dash}/>')
        self.parts.append(f'<text x="{legend_x + 18}" y="{legend_y + 3}" font-size="10">{label}</text>')


def nice_top(values: list) -> float:
    peak = max(values) * 1.1
    step = 10 ** math.floor(math.log10(peak))
    for factor in (1, 2, 2.5, 5, 10):
        if factor * step >= peak:
            return factor * step
    return 10 * step


def draw(rows: list, title: str) -> str:
    xs = [r["templates"] for r in rows]
    route = [(r["templates"], r["route_ms"]["p50"]) for r in rows]
    p95 = [(r["templates"], r["route_ms"]["p95"]) for r in rows]
    exact = [(r["templates"], r["exact_route_ms"]["p50"]) for r in rows]
    load = [(r["templates"], r["load_ms"]) for r in rows]
    read = [(r["templates"], r["read_ms"]) for r in rows]
    memory = [(r["templates"], r["resident_mb"]) for r in rows]

    panels = []
    speed = Panel(0, "route, one thread", "ms", xs, nice_top([v for _, v in exact + p95] + [5]))
    speed.axes(xs)
    speed.line(route, COLOURS["route"], "p50", 0)
    speed.line(p95, COLOURS["p95"], "p95", 1)
    speed.line(exact, COLOURS["exact"], "exact scan p50", 2)
    speed.line([(xs[0], 5), (xs[-1], 5)], COLOURS["bar"], "bar: p50 5 ms", 3, dashed=True)
    panels.append(speed)

    cold = Panel(WIDTH, "load from the bytes", "ms", xs, nice_top([v for _, v in load] + [1000]))
    cold.axes(xs)
    cold.line(load, COLOURS["load"], "read + router", 0)
    cold.line(read, COLOURS["read"], "read", 1)
    cold.line([(xs[0], 1000), (xs[-1], 1000)], COLOURS["bar"], "bar: 1 s", 2, dashed=True)
    panels.append(cold)

    rss = Panel(2 * WIDTH, "resident memory", "MB", xs, nice_top([v for _, v in memory]))
    rss.axes(xs)
    rss.line(memory, COLOURS["memory"], "peak RSS", 0)
    panels.append(rss)

    agreement = ", ".join(f"{r['templates']:,}: {100 * r['top1_agreement']:.1f}%" for r in rows)
    body = "\n".join(part for panel in panels for part in panel.parts)
    total_width = 3 * WIDTH
    caption = [html.escape(title), f"top-1 agreement with the exact scan: {agreement}"]
    lines = "\n".join(
        f'<text x="{total_width / 2}" y="{HEIGHT + 10 + 14 * i}" text-anchor="middle" '
        f'font-size="10">{text}</text>' for i, text in enumerate(caption))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_width}" height="{HEIGHT + 34}" '
            f'font-family="sans-serif" font-size="12">\n'
            f'<rect width="100%" height="100%" fill="white"/>\n{body}\n{lines}\n</svg>\n')


def main(argv=None):
    ap = argparse.ArgumentParser(description="Plot `bench --synthetic ... --json` as an SVG.")
    ap.add_argument("report", help="the bench's JSON report")
    ap.add_argument("out", help="the SVG to write")
    ap.add_argument("--title", default="bench --synthetic", help="a line under the charts")
    args = ap.parse_args(argv)
    rows = read_rows(Path(args.report))
    if len(rows) < 2:
        sys.exit(f"{args.report}: at least two synthetic sizes are needed for a plot")
    Path(args.out).write_text(draw(rows, args.title), encoding="utf-8")
    print(f"wrote {args.out} ({len(rows)} sizes)")


if __name__ == "__main__":
    main()
