"""The families behind tilec.ops' backward kernels (tilec/ops/backward.py), by row length N.

- `softmax_bwd` (examples/softmax_bwd.tile), as softmax's rows: N <= 256 and <= 512 with ROWS
  = 4 and 2 rows a block; N <= 1024 .. 8192 one row a block, COLS = N's power of two (read
  once); longer rows loop over 8192-column tiles (their whole tiles read twice).
- `layernorm_bwd`, `rmsnorm_bwd`: rows of 16-byte chunks (N % 8 == 0) up to 8192 columns, the
  `_persistent` kernels (examples/layernorm_bwd_persistent.tile, ...: the next row's cp.async
  copies in flight), COLS = N's power of two; other rows up to 4096 columns, the register
  kernels (examples/layernorm_bwd.tile, rmsnorm_bwd.tile), COLS likewise; longer rows, the
  `_long` kernels (tiles of 2048 columns, the whole tiles read twice). 8 elements a thread: the
  register kernels past 4096 columns would have 1024 threads of 64 registers, and they spill.
  Each block walks rows block.x + i * G and leaves its sums of dw (and db) in its row of a G x
  N f32 buffer: `partial_rows` picks G, the blocks that fit the GPU at once (16 warps an SM at
  ~100-120 registers a thread; at 8192 columns and for the `_long` kernels, one block).
- `colsum` (examples/colsum.tile): those G rows summed into dw (db), in f32, f16 or bf16; a
  launch sums B batches of them (B x G x N into B x N): LayerNorm's dw and db in one.

Every build is for sm_80, whose PTX runs on SM 8.x and 9.0 alike (the kernels use nothing of
sm_90a's), in f16 and bf16.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from tilec.ops.specs import ALIGNED, DTYPES
from tilec.runtime.family import Build, FamilySpec, Rule

ARCH = "sm_80"
ARGS = {
    "softmax_bwd": (("Y", "tensor"), ("DY", "tensor"), ("DX", "tensor")),
    "layernorm_bwd": (
        ("X", "tensor"),
        ("W", "tensor"),
        ("DY", "tensor"),
        ("DX", "tensor"),
        ("DW", "tensor"),
        ("DB", "tensor"),
        ("eps", "scalar"),
    ),
    "rmsnorm_bwd": (
        ("X", "tensor"),
        ("W", "tensor"),
        ("DY", "tensor"),
        ("DX", "tensor"),
        ("DW", "tensor"),
        ("eps", "scalar"),
    ),
    "colsum": (("P", "tensor"), ("Y", "tensor")),
}
OUT_DTYPES = ("f32", "f16", "bf16")  # colsum's: dw and db in the weight's dtype

# (build tag, kernel, params, N range low (exclusive), high (inclusive) or None, blocks an SM,
# further conditions)
Bucket = tuple[str, str, dict[str, int], int, int | None, int, tuple[str, ...]]


def softmax_buckets() -> list[Bucket]:
    out: list[Bucket] = [
        ("r4c256", "softmax_bwd", {"COLS": 256, "ROWS": 4}, 0, 256, 0, ()),
        ("r2c512", "softmax_bwd", {"COLS": 512, "ROWS": 2}, 256, 512, 0, ()),
    ]
    out += [(f"c{c}", "softmax_bwd", {"COLS": c}, c // 2, c, 0, ()) for c in (1024, 2048, 4096)]
    out.append(("c8192", "softmax_bwd", {"COLS": 8192}, 4096, None, 0, ()))  # loops past 8192
    return out


def norm_buckets(op: str) -> list[Bucket]:
    """The norms' buckets in the order the rules try them: 16-byte rows first (the cp.async
    kernels), then any row."""
    out: list[Bucket] = []
    for c in (256, 512, 1024, 2048, 4096):
        lo, per_sm = c // 2 if c > 256 else 0, 4096 // c  # 16 warps an SM
        out.append((f"p{c}", f"{op}_bwd_persistent", {"COLS": c}, lo, c, per_sm, (ALIGNED,)))
        out.append((f"c{c}", f"{op}_bwd", {"COLS": c}, lo, c, per_sm, ()))
    # LayerNorm's 1024 threads at 8192 columns spill 4 B: 512 threads (16 elements each)
    wide = {"COLS": 8192, **({"THREADS": 512} if op == "layernorm" else {})}
    out.append(("p8192", f"{op}_bwd_persistent", wide, 4096, 8192, 1, (ALIGNED,)))
    out.append(("long", f"{op}_bwd_long", {}, 4096, None, 1, ()))
    return out


def buckets(name: str) -> list[Bucket]:
    return softmax_buckets() if name == "softmax_bwd" else norm_buckets(name.removesuffix("_bwd"))


@functools.lru_cache(maxsize=1024)
def partial_rows(name: str, n: int, r: int, num_sms: int) -> int:
    """G, the rows of partial sums (and blocks) of a `layernorm_bwd`/`rmsnorm_bwd` launch over
    R = `r` rows of N = `n` columns: the blocks of N's bucket that fit the GPU at once, at most
    R (the `_long` kernels need every block to have a row). A range's builds for 16-byte rows
    and for any row hold the same blocks an SM, so N alone decides it. Cached: every backward
    call asks (listing the buckets costs ~17 us)."""
    for _, _, _, lo, hi, per_sm, _ in buckets(name):
        if n > lo and (hi is None or n <= hi):
            return max(1, min(r, num_sms * per_sm))
    raise AssertionError(f"{name}: no bucket for N = {n}")


def _when(lo: int, hi: int | None) -> tuple[str, ...]:
    return (*[f"N > {lo}"] * bool(lo), *[f"N <= {hi}"] * (hi is not None))


def row_spec(name: str) -> FamilySpec:
    """The family of a backward row kernel: each bucket built for f16 and bf16 on sm_80."""
    builds: dict[str, Build] = {}
    rules: list[Rule] = []
    arg = "Y" if name == "softmax_bwd" else "X"
    for tag, kernel, params, lo, hi, _, extra in buckets(name):
        for dtype in DTYPES:
            build = f"{tag}_{dtype}"
            full = {**{k: str(v) for k, v in params.items()}, "T": dtype}
            builds[build] = Build(build, f"examples/{kernel}.tile", kernel, full, ARCH)
            when = (*_when(lo, hi), *extra)
            rules.append(Rule(build, when, {arg: dtype}, (), f"{name} rows, {tag}"))
    first = ARGS[name][0][0]
    sizes = {"R": (first, 0), "N": (first, 1)}
    return FamilySpec(name, ARGS[name], builds, tuple(rules), sizes=sizes)


def colsum_spec() -> FamilySpec:
    """Column sums of f32 partial sums into f32, f16 or bf16 (one build each, sm_80)."""
    builds = {
        f"o{o}": Build(f"o{o}", "examples/colsum.tile", "colsum", {"O": o}, ARCH)
        for o in OUT_DTYPES
    }
    rules = tuple(Rule(f"o{o}", (), {"P": "f32", "Y": o}, (), f"into {o}") for o in OUT_DTYPES)
    return FamilySpec("colsum", ARGS["colsum"], builds, rules)


BACKWARD_SPECS: dict[str, Callable[[], FamilySpec]] = {
    "softmax_bwd": lambda: row_spec("softmax_bwd"),
    "layernorm_bwd": lambda: row_spec("layernorm_bwd"),
    "rmsnorm_bwd": lambda: row_spec("rmsnorm_bwd"),
    "colsum": colsum_spec,
}
