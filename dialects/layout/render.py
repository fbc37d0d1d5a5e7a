"""Pictures of layouts: CuTe's `print_layout` text table and `print_latex`-style SVG."""

from __future__ import annotations

from html import escape

from tilec.dialects.layout.algebra import (
    ComposedLayout,
    IntTuple,
    Layout,
    LayoutError,
    product,
    rank,
    size,
    tuple_str,
)
from tilec.dialects.layout.int_tuple import idx2crd

# Eight light colours, as in CuTe's print_latex: neighbouring threads/indices stay apart.
PALETTE = (
    "#afafff",
    "#afffaf",
    "#ffafaf",
    "#ffffaf",
    "#afffff",
    "#ffafff",
    "#d7d7ff",
    "#d7ffd7",
)
CELL_W, CELL_H = 48, 24


def _grid(layout: Layout | ComposedLayout) -> list[list[int]]:
    """Index at (row, col): rows walk mode 0, columns mode 1; a rank-1 layout is one column."""
    r = rank(layout)
    if r > 2:
        raise LayoutError(f"cannot draw {layout}: it has rank {r}, pictures need rank 1 or 2")
    if r == 1:
        return [[layout(m)] for m in range(size(layout))]
    return [[layout(m, n) for n in range(size(layout, 1))] for m in range(size(layout, 0))]


def layout_table(layout: Layout | ComposedLayout) -> str:
    """CuTe's `print_layout`:

    (2,3):(3,1)
           0    1    2
        +----+----+----+
     0  |  0 |  1 |  2 |
        +----+----+----+
     1  |  3 |  4 |  5 |
        +----+----+----+
    """
    grid = _grid(layout)
    cells = [[str(v) for v in row] for row in grid]
    return _table(str(layout), cells)


def _table(title: str, cells: list[list[str]]) -> str:
    width = max(len(c) for row in cells for c in row) + 2
    cols = len(cells[0])
    rule = "    " + ("+" + "-" * width) * cols + "+"
    lines = [title, "    " + "".join(f" {n:>{width - 1}} " for n in range(cols)).rstrip()]
    for m, row in enumerate(cells):
        lines.append(rule)
        lines.append(f"{m:>2}  " + "".join(f"|{c:>{width - 1}} " for c in row) + "|")
    lines.append(rule)
    return "\n".join(lines)


def _tv_cells(tv: Layout, tile: IntTuple) -> list[list[tuple[int, int] | None]]:
    """Which (thread, value) owns each cell of the M x N tile; the first owner wins."""
    if rank(tv) != 2:
        raise LayoutError(f"a thread-value layout has rank 2 (threads, values); {tv} does not")
    if not isinstance(tile, tuple) or len(tile) != 2:
        raise LayoutError(f"a thread-value tile is (M,N); got {tuple_str(tile)}")
    rows, cols = product(tile[0]), product(tile[1])
    owner: list[list[tuple[int, int] | None]] = [[None] * cols for _ in range(rows)]
    for t in range(size(tv, 0)):
        for v in range(size(tv, 1)):
            idx = tv(t, v)
            if not 0 <= idx < rows * cols:
                raise LayoutError(
                    f"{tv} sends thread {t} value {v} to {idx}, outside the {rows}x{cols} tile"
                )
            m, n = idx2crd(idx, (rows, cols))
            if owner[m][n] is None:
                owner[m][n] = (t, v)
    return owner


def tv_table(tv: Layout, tile: IntTuple) -> str:
    """The M x N tile with each cell labelled by the thread and value that own it: `T3V1`."""
    owner = _tv_cells(tv, tile)
    cells = [["" if o is None else f"T{o[0]}V{o[1]}" for o in row] for row in owner]
    return _table(f"{tv} over {tuple_str(tile)}", cells)


def to_svg(layout: Layout | ComposedLayout, tv_tile: IntTuple | None = None) -> str:
    """An SVG grid: cells hold the index (coloured by index mod 8) or, with `tv_tile`, the
    thread and value owning that cell of the tile (coloured by thread)."""
    if tv_tile is None:
        grid = _grid(layout)
        labels = [[(str(v), PALETTE[v % len(PALETTE)]) for v in row] for row in grid]
        title = str(layout)
    else:
        owner = _tv_cells(layout, tv_tile)
        labels = [
            [("", "#ffffff") if o is None else (f"T{o[0]}V{o[1]}", PALETTE[o[0] % 8]) for o in row]
            for row in owner
        ]
        title = f"{layout} over {tuple_str(tv_tile)}"
    rows, cols = len(labels), len(labels[0])
    left, top = CELL_W, 2 * CELL_H
    width, height = left + cols * CELL_W + 4, top + rows * CELL_H + 4
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        f'<text x="4" y="14">{escape(title)}</text>',
    ]
    for n in range(cols):
        out.append(_text(left + n * CELL_W + CELL_W / 2, top - 6, str(n)))
    for m in range(rows):
        out.append(_text(left / 2, top + m * CELL_H + CELL_H / 2 + 4, str(m)))
        for n, (label, fill) in enumerate(labels[m]):
            x, y = left + n * CELL_W, top + m * CELL_H
            out.append(
                f'<rect x="{x}" y="{y}" width="{CELL_W}" height="{CELL_H}" '
                f'fill="{fill}" stroke="#000000"/>'
            )
            out.append(_text(x + CELL_W / 2, y + CELL_H / 2 + 4, label))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _text(x: float, y: float, label: str) -> str:
    return f'<text x="{x:g}" y="{y:g}" text-anchor="middle">{escape(label)}</text>'
