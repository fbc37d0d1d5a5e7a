"""Draws docs/performance.md's plots (docs/img/*.png) from the recorded results in bench/results.

The figures are read, never computed: each plot shows a table of a results file as measured
(ratios to the reference timed in the same run). Needs matplotlib (`pip install -e ".[bench]"`).

    python bench/plot_performance.py [--results bench/results] [--out docs/img]
"""

from __future__ import annotations

import argparse
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COLORS = {"bf16": "#1f77b4", "f16": "#ff7f0e", "tilec": "#1f77b4", "torch": "#7f7f7f"}
COLORS |= {"triton": "#2ca02c", "sm80": "#9467bd"}


def load(results: Path) -> dict[str, Any]:
    """Every results file by its stem (sm90_gemm.json -> "sm90_gemm"). Numbers stay Decimals,
    so a figure prints as it was recorded (1.00, not 1.0)."""
    files = sorted(results.glob("*.json"))
    return {p.stem: json.loads(p.read_text(), parse_float=Decimal) for p in files}


def table(data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """A table's rows as dicts keyed by its columns."""
    t = data["tables"][name]
    return [dict(zip(t["columns"], row, strict=True)) for row in t["rows"]]


def span(ratio: Decimal | list[Decimal]) -> tuple[Decimal, Decimal]:
    return (ratio[0], ratio[1]) if isinstance(ratio, list) else (ratio, ratio)


def headline(plt: Any, data: dict[str, Any], out: Path) -> Path:  # noqa: ANN401
    """One line per headline result: its ratio (a dot) or its range over shapes (a bar)."""
    rows = data["headline"]["rows"][::-1]
    fig, ax = plt.subplots(figsize=(8.6, 4.8), dpi=100)
    for y, row in enumerate(rows):
        lo, hi = span(row["ratio"])
        if lo == hi:
            ax.plot([float(lo)], [y], "o", color=COLORS["tilec"], ms=6)
        else:
            xs = [float(lo), float(hi)]
            ax.plot(xs, [y, y], "-", color=COLORS["tilec"], lw=6, solid_capstyle="butt")
        text = f"{lo}" if lo == hi else f"{lo}–{hi}"
        ax.text(max(float(hi), 1.0) + 0.02, y, f"{text}  ({row['date']})", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r['label']}  vs {r['reference']}" for r in rows], fontsize=8)
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xlim(0.4, 1.75)
    ax.set_xlabel("tilec / reference measured in the same run (higher is better)")
    ax.set_title(f"tilec on one {data['headline']['device']}: latest measurements", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return save(plt, fig, out / "headline.png")


def sm90_shapes(plt: Any, data: dict[str, Any], out: Path) -> Path:  # noqa: ANN401
    """The SM90 default GEMM over 27 squares and LLM shapes, bf16 and f16, against cuBLAS."""
    rows = table(data["sm90_gemm"], "shapes")
    fig, ax = plt.subplots(figsize=(9.5, 4.2), dpi=100)
    xs = range(len(rows))
    for dtype, marker in (("bf16", "o"), ("f16", "s")):
        ys = [float(r[dtype]) for r in rows]
        ax.plot(xs, ys, marker, color=COLORS[dtype], label=dtype, ms=5)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(0.9, color="gray", lw=0.8, ls="--", label="0.9 (issue 15's bar)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["shape"] for r in rows], rotation=60, ha="right", fontsize=7)
    ax.set_ylim(0.8, 1.1)
    ax.set_ylabel("tilec / cuBLAS")
    t = data["sm90_gemm"]["tables"]["shapes"]
    title = f"SM90 GEMM default bundle, M×N×K, 3 interleaved rounds ({t['date']})"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="y", alpha=0.3)
    return save(plt, fig, out / "sm90_shapes.png")


def rows_of(shape: str) -> tuple[int, str]:
    m, n, k = shape.split("x")
    return int(m), f"{n}x{k}"


def few_rows(plt: Any, data: dict[str, Any], out: Path) -> Path:  # noqa: ANN401
    """Few-row GEMMs (N = K = 4096) against cuBLAS by M: the SM90 default's swapped builds (the
    call up to 129 rows, then the final build's call) and the SM80 split-K kernel."""
    series: dict[str, list[tuple[int, float]]] = {"f16": [], "bf16": [], "final": [], "sm80": []}
    for r in table(data["sm90_gemm"], "few_rows"):
        m, nk = rows_of(r["shape"])
        if nk == "4096x4096":
            series["f16"].append((m, float(r["f16"])))
            series["bf16"].append((m, float(r["bf16"])))
    for r in table(data["sm90_gemm"], "few_rows_final"):
        m, nk = rows_of(r["shape"])
        if nk == "4096x4096":
            series["final"].append((m, float(r["f16"])))
    for r in table(data["batched_splitk"], "decode"):
        m, nk = rows_of(r["shape"])
        if nk == "4096x4096":
            series["sm80"].append((m, float(r["sm80_splitk4"])))
    style = {
        "f16": ("o-", COLORS["f16"], "SM90 default, f16"),
        "bf16": ("o-", COLORS["bf16"], "SM90 default, bf16"),
        "final": ("D", "#d62728", "SM90 default with the 129–192-row variant, f16 (later call)"),
        "sm80": ("o-", COLORS["sm80"], "SM80 split-K ÷4, f16"),
    }
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=100)
    for key, points in series.items():
        fmt, color, label = style[key]
        ax.plot(*zip(*sorted(points), strict=True), fmt, color=color, label=label, ms=4)
    ax.set_xscale("log", base=2)
    ticks = [1, 4, 8, 16, 32, 48, 64, 96, 128, 160, 192]
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(m) for m in ticks], fontsize=7)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xlabel("M (rows), N = K = 4096")
    ax.set_ylabel("tilec / cuBLAS (CUDA graphs)")
    date = data["sm90_gemm"]["tables"]["few_rows"]["date"]
    ax.set_title(f"Few-row GEMMs: C^T = B A^T variants of the SM90 default ({date})", fontsize=10)
    ax.set_ylim(0, math.ceil(max(v for p in series.values() for _, v in p) * 10 + 1) / 10)
    ax.legend(fontsize=8, loc="lower left")
    ax.grid(alpha=0.3)
    return save(plt, fig, out / "sm90_few_rows.png")


def row_kernels(plt: Any, data: dict[str, Any], out: Path) -> Path:  # noqa: ANN401
    """Softmax and LayerNorm at issue 16's shapes: tilec, torch and Triton against the copy."""
    rows = table(data["rows"], "bars")
    fig, ax = plt.subplots(figsize=(8.6, 4.2), dpi=100)
    width = 0.27
    bars = (("tilec", "tilec"), ("triton", "Triton"), ("torch", "torch"))
    for i, (who, label) in enumerate(bars):
        xs = [x + (i - 1) * width for x in range(len(rows))]
        ys = [float(r[who]) for r in rows]
        ax.bar(xs, ys, width, color=COLORS[who], label=label)
    ax.set_xticks(range(len(rows)))
    names = [f"{r['kernel']}\n{r['shape']}" for r in rows]
    ax.set_xticklabels(names, fontsize=7)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_ylabel("fraction of the copy ceiling")
    date = data["rows"]["tables"]["bars"]["date"]
    ax.set_title(f"Row kernels (f16) against the 1 GiB device copy ({date})", fontsize=10)
    ax.legend(fontsize=8, ncols=3, loc="upper right")
    ax.set_ylim(0, 1.15)
    ax.grid(axis="y", alpha=0.3)
    return save(plt, fig, out / "rows.png")


def save(plt: Any, fig: Any, path: Path) -> Path:  # noqa: ANN401
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = load(args.results)
    args.out.mkdir(parents=True, exist_ok=True)
    for draw in (headline, sm90_shapes, few_rows, row_kernels):
        path = draw(plt, data, args.out)
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
