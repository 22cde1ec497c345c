"""The results as an SVG chart, written by hand (no plotting dependency).

One line per measured row: a bar for sqlmem / raw and one for sqlmem / best peer, on a
log scale centred on 1.0 (left of the line: faster than the baseline; right: slower), the
row's targets as red ticks, and the range over the runs as a thin whisker.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from html import escape
from pathlib import Path
from typing import Any

from .harness import Row

__all__ = ["rows_from_json", "write_chart"]

LO, HI = 0.1, 100.0  # the axis, in ratio
LABEL_W, PLOT_W, LINE_H, TOP = 430, 520, 26, 58
RAW_COLOUR, PEER_COLOUR, TARGET_COLOUR = "#3b6ea8", "#e08a2c", "#c62828"


def _x(ratio: float) -> float:
    r = min(max(ratio, LO), HI)
    return LABEL_W + PLOT_W * (math.log10(r) - math.log10(LO)) / (math.log10(HI / LO))


def _bar(y: float, ratio: float, colour: str, span: list[float] | None, label: str) -> str:
    x0, x1 = _x(1.0), _x(ratio)
    left, width = min(x0, x1), max(abs(x1 - x0), 1.0)
    parts = [
        f'<rect x="{left:.1f}" y="{y:.1f}" width="{width:.1f}" height="9" fill="{colour}">'
        f"<title>{escape(label)}: {ratio:.3g}x</title></rect>"
    ]
    if span is not None and span[0] != span[1]:
        a, b = _x(span[0]), _x(span[1])
        parts.append(f'<line x1="{a:.1f}" x2="{b:.1f}" y1="{y + 4.5:.1f}" y2="{y + 4.5:.1f}" '
                     'stroke="#222" stroke-width="1"/>')  # fmt: skip
    text_x = max(x0, x1) + 4
    parts.append(f'<text x="{text_x:.1f}" y="{y + 8.5:.1f}" font-size="9">{ratio:.2f}x</text>')
    return "".join(parts)


def _tick(y: float, limit: float | None) -> str:
    if limit is None:
        return ""
    x = _x(limit)
    return (f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 1:.1f}" y2="{y + 10:.1f}" '
            f'stroke="{TARGET_COLOUR}" stroke-width="2"/>')  # fmt: skip


def _axis(height: float) -> list[str]:
    parts = []
    for value in (0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 100):
        x = _x(value)
        width = 1.5 if value == 1 else 0.5
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 8}" y2="{height - 20}" '
                     f'stroke="#999" stroke-width="{width}"/>')  # fmt: skip
        parts.append(f'<text x="{x:.1f}" y="{TOP - 12}" font-size="10" '
                     f'text-anchor="middle">{value:g}x</text>')  # fmt: skip
    return parts


def _label(row: Row) -> str:
    text = f"{row.workload} [{row.metric}]"
    return text if len(text) <= 72 else text[:70] + "…"


def _charted(row: Row) -> bool:
    """Measured rows with a ratio; tail-latency rows only when they carry a target (the
    chart is for the targets: the table has every p99)."""
    if row.skipped is not None or (row.ratio is None and row.peer_ratio is None):
        return False
    return not row.metric.startswith("p99") or row.limit is not None or row.peer is not None


def write_chart(path: Path, rows: list[Row], *, title: str = "sqlmem benchmarks") -> Path:
    """Write the chart of `rows` (those with a ratio or a peer ratio) to `path`."""
    shown = [r for r in rows if _charted(r)]
    height = TOP + LINE_H * max(1, len(shown)) + 40
    width = LABEL_W + PLOT_W + 70
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="18" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<text x="10" y="34" font-size="10">cost ratio, log scale (left of 1x: faster). '
        f'<tspan fill="{RAW_COLOUR}">■ sqlmem / raw apsw</tspan>  '
        f'<tspan fill="{PEER_COLOUR}">■ sqlmem / best peer</tspan>  '
        f'<tspan fill="{TARGET_COLOUR}">| target</tspan>  — range over runs</text>',
        *_axis(height),
    ]
    for i, row in enumerate(shown):
        y = TOP + i * LINE_H
        fill = "#fbe9e7" if row.status == "FAIL" else "#f5f5f5" if i % 2 else "white"
        out.append(f'<rect x="0" y="{y - 3}" width="{width}" height="{LINE_H}" fill="{fill}" '
                   'fill-opacity="0.6"/>')  # fmt: skip
        out.append(f'<text x="8" y="{y + 13}" font-size="10">{escape(_label(row))}</text>')
        if row.ratio is not None and math.isfinite(row.ratio):
            out.append(_bar(y, row.ratio, RAW_COLOUR, row.extra.get("ratio_range"), "vs raw"))
            out.append(_tick(y, row.limit))
        if row.peer_ratio is not None and math.isfinite(row.peer_ratio):
            out.append(_bar(y + 11, row.peer_ratio, PEER_COLOUR,
                            row.extra.get("peer_ratio_range"), f"vs {row.peer_name}"))  # fmt: skip
            out.append(_tick(y + 11, row.peer_limit))
    out.append("</svg>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def rows_from_json(data: dict[str, Any]) -> list[Row]:
    """The rows of a results.json (to chart a saved run again)."""
    names = {f.name for f in dataclasses.fields(Row)}
    rows = []
    for found in data["results"]:
        fields = {k: v for k, v in found.items() if k in names}
        for key in ("sqlmem", "raw"):  # null in JSON for nan
            fields[key] = math.nan if fields.get(key) is None else fields[key]
        rows.append(Row(**fields))
    return rows


if __name__ == "__main__":  # python -m benchmarks.chart results.json chart.svg [title]
    saved = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    title = sys.argv[3] if len(sys.argv) > 3 else "sqlmem benchmarks"
    print(write_chart(Path(sys.argv[2]), rows_from_json(saved), title=title))
