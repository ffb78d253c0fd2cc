#!/usr/bin/env python3
"""Draws one trace's spans as a timeline (SVG), as a trace viewer shows them: a row per span,
in the tree's order (each under its parent, siblings by start), a bar from its start to its
end, coloured by the service that exported it; a span link (a resumption's, to what woke it)
is a dashed line from the linked span's bar to the linking span's.

    A2A_TRACE_SPANS_FILE=/tmp/spans.json cargo nextest run --workspace -E 'binary(tracing)'
    python3 infra/trace-picture.py /tmp/spans.json > docs/images/delegated-trace.svg

The input is what tests/tests/tracing.rs writes: one JSON object a line, with service, name,
kind, spanId, parentSpanId, startUnixNano, endUnixNano, links (span ids; optional) and
taskState. The standard library
only; docs/tracing.md shows the result.
"""

from __future__ import annotations

import html
import json
import sys

LABEL_WIDTH = 330
BAR_WIDTH = 600
ROW = 22
TOP = 34
COLOURS = {"ours": "#3b73b9", "remote": "#d9822b"}
OTHER = "#7a7a7a"
KINDS = {"SPAN_KIND_SERVER": "server", "SPAN_KIND_CLIENT": "client", "SPAN_KIND_INTERNAL": "internal"}


def ordered(spans: list[dict]) -> list[tuple[int, dict]]:
    """(depth, span) in the tree's order: roots (no parent among the spans) first by start."""
    ids = {s["spanId"] for s in spans}
    children: dict[str, list[dict]] = {}
    for s in spans:
        parent = s["parentSpanId"] if s["parentSpanId"] in ids else ""
        children.setdefault(parent, []).append(s)
    for kids in children.values():
        kids.sort(key=lambda s: s["startUnixNano"])
    out: list[tuple[int, dict]] = []

    def walk(parent: str, depth: int) -> None:
        for s in children.get(parent, []):
            out.append((depth, s))
            walk(s["spanId"], depth + 1)

    walk("", 0)
    return out


def draw(spans: list[dict]) -> str:
    rows = ordered(spans)
    start = min(s["startUnixNano"] for s in spans)
    end = max(s["endUnixNano"] for s in spans)
    total = max(end - start, 1)
    x = lambda t: LABEL_WIDTH + (t - start) / total * BAR_WIDTH  # noqa: E731
    height = TOP + ROW * len(rows) + 12
    width = LABEL_WIDTH + BAR_WIDTH + 90
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="8" y="18" font-weight="bold">One delegated task\'s trace: '
        f'{len(rows)} spans, {total / 1e6:.0f} ms</text>',
    ]
    for service, colour in COLOURS.items():
        index = list(COLOURS).index(service)
        out.append(f'<rect x="{LABEL_WIDTH + index * 90}" y="8" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{LABEL_WIDTH + index * 90 + 16}" y="18">{service}</text>')
    row_of = {s["spanId"]: i for i, (_, s) in enumerate(rows)}
    for i, (_, s) in enumerate(rows):
        for linked in s.get("links", []):
            if linked not in row_of:
                continue
            other = rows[row_of[linked]][1]
            out.append(f'<line x1="{x(other["endUnixNano"]):.1f}" y1="{TOP + row_of[linked] * ROW + ROW / 2}" '
                       f'x2="{x(s["startUnixNano"]):.1f}" y2="{TOP + i * ROW + ROW / 2}" '
                       f'stroke="#444" stroke-dasharray="4 3"/>')
    for i, (depth, s) in enumerate(rows):
        y = TOP + i * ROW
        colour = COLOURS.get(s["service"], OTHER)
        label = f'{s["service"]} · {s["name"]} ({KINDS.get(s["kind"], s["kind"])})'
        if s.get("links"):
            label += " ⇠ link"
        out.append(f'<text x="{8 + depth * 12}" y="{y + 14}">{html.escape(label)}</text>')
        left = x(s["startUnixNano"])
        bar = max(x(s["endUnixNano"]) - left, 1.5)
        out.append(f'<rect x="{left:.1f}" y="{y + 4}" width="{bar:.1f}" height="{ROW - 8}" '
                   f'fill="{colour}" rx="2"/>')
        ms = (s["endUnixNano"] - s["startUnixNano"]) / 1e6
        out.append(f'<text x="{left + bar + 4:.1f}" y="{y + 14}" fill="#444">{ms:.1f} ms</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> None:
    spans = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    if not spans:
        raise SystemExit(f"trace-picture: no spans in {sys.argv[1]}")
    sys.stdout.write(draw(spans))


if __name__ == "__main__":
    main()
