"""The families behind `tilec.ops`: which builds of which examples, and where each runs.

Rows (softmax, layernorm, rmsnorm) of N columns, by bucket of N. Each build covers rows up to
its tile (COLS); a row of one tile runs its loop-free `specialize` variant, a longer one loops.

- N <= 256 and <= 512: COLS = 256 or 512 with ROWS = 4 or 2 rows a block (1024 elements a
  block, 8 or 16 a thread).
- N <= 1024, 2048, 4096, 8192: COLS = N's power of two, one row a block, read once.
- N <= 16384 and <= 32768 with N % 8 == 0 (rows of whole 16-byte chunks, which cp.async
  takes): the persistent kernels, one block an SM holding a row while the next row's copy is
  in flight.
- Other N up to 32768: one row a block, COLS = 16384 (and 32768 for softmax; LayerNorm with
  256 threads, RMSNorm 512), its accesses skewed where rows are not 16-byte aligned
  (lowering/tile_skew.py).
- N > 32768: softmax's persistent kernel (N % 8 == 0; it walks a long row's whole tiles), else
  one block a row of COLS = 32768 (softmax) or 16384 (the norms): whole tiles read twice.
- Last, for any N > 8192 a wider build left out of the family (its contract broken for a dtype)
  does not cover: the 8192-column build, looping over its whole tiles.

An SM 8.x device gets the one-block-a-row builds for sm_80 (the persistent ones need sm_90a's
shared memory). Every build is made for f16 and bf16. The buckets follow the H200 figures of
docs/performance.md ("Row kernels"); tables that `tilec tune` writes over the kernels'
tune(...) clauses go ahead of these rules (`tilec family build --tuning`).
"""

from __future__ import annotations

from collections.abc import Callable

from tilec.runtime.family import Build, FamilySpec, Rule

DTYPES = ("f16", "bf16")
ARGS = {
    "softmax": (("X", "tensor"), ("Y", "tensor")),
    "layernorm": (
        ("X", "tensor"),
        ("W", "tensor"),
        ("B", "tensor"),
        ("Y", "tensor"),
        ("eps", "scalar"),
    ),
    "rmsnorm": (("X", "tensor"), ("W", "tensor"), ("Y", "tensor"), ("eps", "scalar")),
}
ALIGNED = "N % 8 == 0"  # rows of whole 16-byte chunks (f16/bf16): cp.async takes them


def _bucket(lo: int, hi: int | None) -> list[str]:
    return [f"N > {lo}"] * bool(lo) + [f"N <= {hi}"] * (hi is not None)


# (build tag, kernel file stem, params, N range low (exclusive), high (inclusive) or None, extra)
Bucket = tuple[str, str, dict[str, int], int, int | None, tuple[str, ...]]


def row_buckets(op: str, persistent: bool) -> list[Bucket]:
    """The buckets of an operation's rows, in the order the rules try them."""
    wide_rows = 32768 if op == "softmax" else 16384  # the norms' one-block rows: 16384 spills less
    out: list[Bucket] = [
        ("r4c256", op, {"COLS": 256, "ROWS": 4}, 0, 256, ()),
        ("r2c512", op, {"COLS": 512, "ROWS": 2}, 256, 512, ()),
    ]
    out += [(f"c{c}", op, {"COLS": c}, c // 2, c, ()) for c in (1024, 2048, 4096, 8192)]
    if persistent:
        for c in (16384, 32768):
            out.append((f"p{c}", f"{op}_persistent", {"COLS": c}, c // 2, c, (ALIGNED,)))
        if op == "softmax":  # the persistent softmax takes any N: longer rows walk whole tiles
            out.append(("p32768", f"{op}_persistent", {"COLS": 32768}, 32768, None, (ALIGNED,)))
    # One-block rows of 16384 (tilec tune --compile-only): LayerNorm takes 256 threads (at 512
    # or 1024 ptxas holds it to 64 registers and the skewed store spills), RMSNorm 512 (at 256,
    # bf16 spills 8 B).
    threads = {"softmax": {}, "layernorm": {"THREADS": 256}, "rmsnorm": {"THREADS": 512}}[op]
    wide = {"COLS": 16384, **threads}
    out.append(("c16384", op, wide, 8192, 16384, ()))
    out.append(
        (f"c{wide_rows}", op, wide if wide_rows == 16384 else {"COLS": wide_rows}, 16384, None, ())
    )
    # Last, any longer row: the 8192-column build loops over its whole tiles (a wider build a
    # dtype's registers refused is left out of the family, and its rows end up here).
    out.append(("c8192", op, {"COLS": 8192}, 8192, None, ()))
    return out


def row_spec(op: str) -> FamilySpec:
    """The family of a row operation: each bucket built for f16 and bf16, for sm_90a (with the
    persistent kernels) and for sm_80."""
    builds: dict[str, Build] = {}
    rules: list[Rule] = []
    for arch, persistent in (("sm_90a", True), ("sm_80", False)):
        for tag, stem, params, lo, hi, extra in row_buckets(op, persistent):
            for dtype in DTYPES:
                name = f"{tag}_{dtype}_{arch.replace('_', '')}"
                kernel = stem
                full = {**{k: str(v) for k, v in params.items()}, "T": dtype}
                builds.setdefault(name, Build(name, f"examples/{stem}.tile", kernel, full, arch))
                when = (*_bucket(lo, hi), *extra)
                rules.append(Rule(name, when, {"X": dtype}, (), f"{op} rows, bucket {tag}"))
    return FamilySpec(op, ARGS[op], builds, tuple(rules), sizes={"R": ("X", 0), "N": ("X", 1)})


SPECS: dict[str, Callable[[], FamilySpec]] = {
    "softmax": lambda: row_spec("softmax"),
    "layernorm": lambda: row_spec("layernorm"),
    "rmsnorm": lambda: row_spec("rmsnorm"),
}
