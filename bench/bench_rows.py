"""Bench: row LayerNorm and softmax by tilec, torch and a Triton kernel, beside the copy ceiling.

    python bench/bench_rows.py --bundles DIR [--out table.md] [--only layernorm|softmax] [--graph]

DIR holds the bundles `layernorm_c{COLS}_sm90a` and `softmax_c{COLS}_sm90a`: a shape of N columns
runs the bundle whose COLS is the smallest of 1024, 2048, 4096, 8192, 16384, 32768 that is >= N;
a missing bundle skips that shape's row, with a note. `--split S` runs the bundles
`*_c{COLS}s{S}_sm90a` instead (rows split over clusters of S blocks), COLS * S >= N, and only
the shapes whose rows that bundle does split (COLS < N). `--persistent` runs the bundles
`*_p{COLS}_sm90a` of examples/softmax_persistent.tile and layernorm_persistent.tile (min(R,
num_sms) blocks walking the rows, the next row's copy in flight), on the shapes with N <= COLS.

LayerNorm: y = (x - mean) / sqrt(var + 1e-5) * w + b over each row of an R×N f16 x (f32 math),
w = 1 + 0.1·randn and b = 0.1·randn f16 vectors of N; tilec is `k(x, w, b, y, eps)`, torch is
`F.layer_norm(x, (N,), w, b, eps)`. Softmax: y = softmax(x, dim=1) of an R×N f16 x with
R·N = 2^28 (R = 262144 for the ragged N = 1000); tilec is `k(x, y)`, torch `torch.softmax(x, 1,
out=y)`. The Triton column is the tutorials' kernel (05-layer-norm's forward, 02-fused-softmax)
with the whole row in registers: one program per row, BLOCK_SIZE = next_power_of_2(N), one
masked load of the row, the reductions, one masked store; num_warps = min(max(BLOCK_SIZE // 256,
1), 8) as the tutorial picks it, and also 16 and 32 when BLOCK_SIZE >= 16384. The fastest of
those is the Triton column and is named under "Triton config"; a configuration Triton fails to
compile is reported and left out.

Bandwidth counts read x + write y (+ w and b once for LayerNorm): the least traffic the
operation needs. The ceiling is a 1 GiB f32 device-to-device copy, read + write counted
(bench_memory.copy_case), measured once. Every output is NaN-poisoned and checked against
float64 torch (relative Frobenius error < 2e-3) before anything is timed; inputs are randn.
Each figure is `tilec.runtime.measure.time_ms` (median of 15 samples of 20 back-to-back
launches timed with CUDA events; `--graph`: `time_graph_ms`, the 20 launches replayed from a
CUDA graph, the GPU's time alone, the ceiling still `time_ms`); tilec, torch and every Triton
configuration are timed in turn, 5 times over, and each figure is the median of its 5.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from tilec.runtime import load
from tilec.runtime.measure import time_graph_ms, time_ms

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory import copy_case, gbs  # noqa: E402

ARCH = "sm90a"
COLS = (1024, 2048, 4096, 8192, 16384, 32768)  # the bundles' row widths
EPS = 1e-5
TOL = 2e-3
REPEATS = 5
LAYERNORM_SHAPES = [(32768, 8192), (4096, 32768), (4096, 4096), (8192, 1000)]
SOFTMAX_SHAPES = [(262144, 1000), *[((1 << 28) // n, n) for n in (1024, 4096, 8192, 32768)]]

Fn = Callable[[], object]
Timer = Callable[[Fn], float]


# Triton's 05-layer-norm forward, the whole row in one block: one program per row.
@triton.jit
def _layer_norm_row(X, Y, W, B, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * stride
    y_row = Y + row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    b = tl.load(B + cols, mask=mask).to(tl.float32)
    y = diff * rstd * w + b
    tl.store(y_row + cols, y.to(Y.dtype.element_ty), mask=mask)


# Triton's 02-fused-softmax, one program per row (the tutorial's persistent loop left out).
@triton.jit
def _softmax_row(X, Y, stride, N, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * stride
    y_row = Y + row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - tl.max(x, axis=0))
    y = num / tl.sum(num, axis=0)
    tl.store(y_row + cols, y.to(Y.dtype.element_ty), mask=mask)


@dataclass
class Row:
    """One shape's bandwidths in GB/s; `triton_gbs` is None when no configuration compiled."""

    kernel: str
    shape: str
    tilec_gbs: float
    torch_gbs: float
    triton_gbs: float | None
    config: str


def bundle_for(
    root: Path, kernel: str, r: int, n: int, split: int = 1, persistent: bool = False
) -> Path | None:
    """The bundle of the narrowest COLS >= n among those built (COLS * SPLIT with --split),
    else the widest (it loops over the row in tiles), or None (with a note) when there is
    none. `persistent`: the bundles `*_p{COLS}`, on rows of COLS at most (the persistent
    softmax takes longer ones too, but through its general PTX, which is not what it is for)."""
    form, tag = ("p", "") if persistent else ("c", "" if split == 1 else f"s{split}")
    built = [c for c in COLS if (root / f"{kernel}_{form}{c}{tag}_{ARCH}").is_dir()]
    cols = next((c for c in built if c * split >= n), built[-1] if built else None)
    if split > 1 and cols is not None and cols >= n:
        print(f"{kernel} {r}x{n}: a row of one block's tile: not split, row skipped", flush=True)
        return None
    if persistent and cols is not None and cols < n:
        print(f"{kernel} {r}x{n}: longer than the persistent bundles' rows: skipped", flush=True)
        return None
    bundle = root / f"{kernel}_{form}{cols}{tag}_{ARCH}"
    if cols is None or not bundle.is_dir():
        print(f"{kernel} {r}x{n}: no bundle {bundle}: row skipped", flush=True)
        return None
    return bundle


def check(what: str, y: torch.Tensor, ref: torch.Tensor) -> None:
    """Relative Frobenius error against the float64 reference (NaN fails)."""
    err = ((y.double() - ref).norm() / ref.norm()).item()
    if not err < TOL:
        raise AssertionError(f"{what}: WRONG, relative error {err:.3g} vs float64 torch")


def warp_choices(block: int) -> tuple[int, list[int]]:
    """The tutorial's num_warps, and every choice timed (16 and 32 added for wide rows)."""
    tutorial = min(max(block // 256, 1), 8)
    extra = [w for w in (16, 32) if block >= 16384 and w != tutorial]
    return tutorial, [tutorial, *extra]


def triton_variants(
    what: str, y: torch.Tensor, ref: torch.Tensor, block: int, launch: Callable[[int], Fn]
) -> dict[str, Fn]:
    """Each num_warps choice that compiles, checked, by its name (the first call compiles)."""
    tutorial, choices = warp_choices(block)
    out: dict[str, Fn] = {}
    for warps in choices:
        name = f"BLOCK_SIZE={block} num_warps={warps}" + (
            " (tutorial)" if warps == tutorial else ""
        )
        fn = launch(warps)
        y.fill_(float("nan"))
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - reported; the other configurations still run
            print(f"{what}: Triton {name} FAILED: {type(exc).__name__}: {exc}", flush=True)
            continue
        check(f"Triton {name}, {what}", y, ref)
        out[name] = fn
    return out


def interleaved(fns: dict[str, Fn], timer: Timer) -> dict[str, float]:
    """Each function's median ms over REPEATS rounds, every round timing all of them in turn."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(REPEATS):
        for name, fn in fns.items():
            samples[name].append(timer(fn))
    return {name: statistics.median(s) for name, s in samples.items()}


def to_row(kernel: str, shape: str, nbytes: int, ms: dict[str, float]) -> Row:
    """`ms` holds "tilec", "torch" and the Triton configurations by name; the fastest of those
    is the row's Triton figure."""
    ours, theirs = gbs(nbytes, ms.pop("tilec")), gbs(nbytes, ms.pop("torch"))
    if not ms:
        return Row(kernel, shape, ours, theirs, None, "none compiled")
    best = min(ms, key=lambda name: ms[name])
    return Row(kernel, shape, ours, theirs, gbs(nbytes, ms[best]), best)


def layernorm_row(
    root: Path, r: int, n: int, timer: Timer, split: int = 1, persistent: bool = False
) -> Row | None:
    bundle = bundle_for(root, "layernorm", r, n, split, persistent)
    if bundle is None:
        return None
    shape = f"{r}x{n} f16 ({bundle.name.split('_')[1]})"
    kernel = load(bundle)
    x = torch.randn(r, n, device="cuda", dtype=torch.float16)
    w = (1 + 0.1 * torch.randn(n, device="cuda")).half()
    b = (0.1 * torch.randn(n, device="cuda")).half()
    ref = F.layer_norm(x.double(), (n,), w.double(), b.double(), EPS)
    y = torch.full_like(x, float("nan"))
    we, be = w.expand(r, n), b.expand(r, n)  # the kernel's W and B: N values over the rows
    kernel(x, we, be, y, EPS)
    check(f"tilec layernorm {shape}", y, ref)
    check(f"torch layernorm {shape}", F.layer_norm(x, (n,), w, b, EPS), ref)
    y_tri = torch.full_like(x, float("nan"))
    block = triton.next_power_of_2(n)

    def launch(warps: int) -> Fn:
        return lambda: _layer_norm_row[(r,)](
            x, y_tri, w, b, x.stride(0), n, EPS, BLOCK_SIZE=block, num_warps=warps
        )

    variants = triton_variants(f"layernorm {shape}", y_tri, ref, block, launch)
    del ref
    torch.cuda.empty_cache()
    fns: dict[str, Fn] = {
        "tilec": lambda: kernel(x, we, be, y, EPS),
        "torch": lambda: F.layer_norm(x, (n,), w, b, EPS),
        **variants,
    }
    nbytes = 2 * r * n * x.element_size() + 2 * n * w.element_size()
    return to_row("layernorm", shape, nbytes, interleaved(fns, timer))


def softmax_row(
    root: Path, r: int, n: int, timer: Timer, split: int = 1, persistent: bool = False
) -> Row | None:
    bundle = bundle_for(root, "softmax", r, n, split, persistent)
    if bundle is None:
        return None
    shape = f"{r}x{n} f16 ({bundle.name.split('_')[1]})"
    kernel = load(bundle)
    x = torch.randn(r, n, device="cuda", dtype=torch.float16)
    ref = torch.softmax(x.double(), 1)
    y = torch.full_like(x, float("nan"))
    kernel(x, y)
    check(f"tilec softmax {shape}", y, ref)
    y_torch = torch.full_like(x, float("nan"))
    torch.softmax(x, 1, out=y_torch)
    check(f"torch softmax {shape}", y_torch, ref)
    y_tri = torch.full_like(x, float("nan"))
    block = triton.next_power_of_2(n)

    def launch(warps: int) -> Fn:
        return lambda: _softmax_row[(r,)](
            x, y_tri, x.stride(0), n, BLOCK_SIZE=block, num_warps=warps
        )

    variants = triton_variants(f"softmax {shape}", y_tri, ref, block, launch)
    del ref
    torch.cuda.empty_cache()
    fns: dict[str, Fn] = {
        "tilec": lambda: kernel(x, y),
        "torch": lambda: torch.softmax(x, 1, out=y_torch),
        **variants,
    }
    return to_row("softmax", shape, 2 * r * n * x.element_size(), interleaved(fns, timer))


KERNELS: dict[str, tuple[Callable[[Path, int, int, Timer], Row | None], list[tuple[int, int]]]] = {
    "layernorm": (layernorm_row, LAYERNORM_SHAPES),
    "softmax": (softmax_row, SOFTMAX_SHAPES),
}


def free() -> None:
    """Release the last shape's tensors (held by its closures until collected)."""
    gc.collect()
    torch.cuda.empty_cache()


def ceiling_gbs() -> float:
    """Always `time_ms`: a copy captured in a CUDA graph becomes a copy-engine memcpy node,
    slower than the kernel torch launches (2.7 against 4.2 TB/s on an H200)."""
    copy = copy_case()
    gbps = gbs(copy.nbytes, time_ms(copy.run))
    del copy
    free()
    return gbps


def table_line(row: Row, ceiling: float) -> str:
    if row.triton_gbs is None:
        triton_cells = "n/a | n/a"
        ratio = "n/a"
    else:
        triton_cells = f"{row.triton_gbs:.0f} | {row.triton_gbs / ceiling:.2f}"
        ratio = f"{row.tilec_gbs / row.triton_gbs:.2f}"
    return (
        f"| {row.kernel} | {row.shape} | {row.tilec_gbs:.0f} | {row.tilec_gbs / ceiling:.2f} | "
        f"{row.torch_gbs:.0f} | {row.torch_gbs / ceiling:.2f} | {triton_cells} | {row.config} | "
        f"{ratio} |"
    )


def render(rows: list[Row], ceiling: float, failed: list[str], timer_name: str) -> str:
    today = datetime.date.today().isoformat()
    lines = [
        f"Measured {today} on {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"triton {triton.__version__}, timed with {timer_name}; copy ceiling {ceiling:.0f} GB/s "
        "(1 GiB f32 device copy, read + write counted).",
        "",
        "| kernel | shape | tilec GB/s | tilec/ceiling | torch GB/s | torch/ceiling | "
        "Triton GB/s | Triton/ceiling | Triton config | tilec/Triton |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
        *[table_line(row, ceiling) for row in rows],
    ]
    if failed:
        lines += ["", *[f"FAILED: {what}" for what in failed]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bundles", required=True, help="folder of the *_c{COLS}_sm90a bundles")
    parser.add_argument("--out", help="also write the markdown table here")
    parser.add_argument("--only", choices=tuple(KERNELS), help="bench one kernel only")
    parser.add_argument("--graph", action="store_true", help="time with time_graph_ms")
    parser.add_argument(
        "--split", type=int, default=1, help="run the bundles of rows split over S-block clusters"
    )
    parser.add_argument(
        "--persistent", action="store_true", help="run the persistent bundles *_p{COLS}"
    )
    args = parser.parse_args()
    timer: Timer = time_graph_ms if args.graph else time_ms
    torch.manual_seed(0)
    ceiling = ceiling_gbs()
    print(f"copy ceiling: {ceiling:.0f} GB/s", flush=True)
    rows: list[Row] = []
    failed: list[str] = []
    for name, (make, shapes) in KERNELS.items():
        if args.only not in (None, name):
            continue
        for r, n in shapes:
            try:
                row = make(Path(args.bundles), r, n, timer, args.split, args.persistent)
            except Exception as exc:  # noqa: BLE001 - one failing shape must not hide the others
                failed.append(f"{name} {r}x{n}: {type(exc).__name__}: {exc}")
                print(f"{name} {r}x{n}: FAILED: {type(exc).__name__}: {exc}", flush=True)
                row = None
            free()
            if row is not None:
                rows.append(row)
                print(table_line(row, ceiling), flush=True)
    table = render(rows, ceiling, failed, "time_graph_ms" if args.graph else "time_ms")
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
