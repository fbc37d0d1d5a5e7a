"""Which elements the lowered stores and loads touch, for every thread, evaluated on the
`lowered` stage (tilec.banks.Evaluator, the branches each access sits in decided per thread):

- a row (column) reduction of an mma.sync accumulator stored into a vector (attention's LSE):
  every row written once, by one lane, the ragged rows past the vector's end not at all;
- a range of a global tensor's rows (`X[lo .. hi, _]`): a tile of it touches the rows of the
  range only (the range bounds the mode as the tensor's end does), each element once.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from mlir import ir

from tilec import binding
from tilec.banks import Evaluator, Unknown
from tilec.driver import CompileOptions, compile_file

THREADS = 128
GLOBAL = 1 << 32  # argument i is based at i * GLOBAL (a pointer) or is its value in `values`

REDUCTIONS = """
kernel rows(Q: f16[64, 64], K: f16[64, 64], L: f32[M], C: f32[2, 64])
  grid(1) threads(128) target(sm_80)
{
  let sQ = shared<f16>(tile_to_shape(swizzle<3, 3, 3> o (8, 64):(64, 1), (64, 64)))
  let sK = shared<f16>(tile_to_shape(swizzle<3, 3, 3> o (8, 64):(64, 1), (64, 64)))
  copy(local_tile(Q, (64, 64), (0, 0)), sQ)
  copy(local_tile(K, (64, 64), (0, 0)), sK)
  let mma = tiled_mma<sm80.mma_16x8x16.f32.f16.f16.f32>(atoms = (4, 1, 1))
  let s = fragment<f32>(partition_c(mma, (64, 64))) = 0
  gemm(mma, sQ, sK, s)
  store(reduce_max(s, mode = 1) * 2.0, local_tile(L, (64,), (0,)))
  store(reduce_sum(s, mode = 0), local_tile(C, (1, 64), (1, 0)))
}
"""
WINDOW = """
kernel window(X: f32[T, 64], Y: f32[T, 64], lo: i32, hi: i32, t: i32)
  grid(1) threads(128) target(sm_80)
{
  let x = load(local_tile(X[lo .. hi, _], (32, 64), (t, 0)))
  store(x, local_tile(Y[lo .. hi, _], (32, 64), (t, 0)))
}
"""


def lowered(tmp_path: Path, source: str) -> ir.Operation:
    path = tmp_path / "k.tile"
    path.write_text(source)
    return compile_file(str(path), CompileOptions(emit="lowered")).value.operation


def ops_named(module: ir.Operation, names: tuple[str, ...]) -> list[ir.Operation]:
    out: list[ir.Operation] = []
    binding.walk(module, lambda o: out.append(o) if o.name in names else None)
    return out


def taken(op: ir.Operation, ev: Evaluator) -> bool:
    """Whether `op` runs for the thread `ev` evaluates: every scf.if around it takes the side
    it sits in."""
    child, parent = op, op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name == "scf.if":
            side = 0 if child.parent.regions[0].blocks[0] == child.block else 1
            try:
                cond = ev.value(parent.operands[0])
            except Unknown:
                raise AssertionError(f"a branch the test cannot decide: {parent}") from None
            if bool(cond) != (side == 0):
                return False
        child, parent = parent, parent.parent
    return True


def touched(module: ir.Operation, kind: str, values: dict[int, int]) -> Counter:
    """(argument, byte, width) of every global access of `kind` ("ld" or "st") each thread
    runs: llvm.load/llvm.store of !llvm.ptr<1>, and the predicated `@p ld.global`/`st.global`
    of inline asm (its predicate evaluated too). `values[i]` is integer argument i's value
    (pointers are based GLOBAL apart)."""
    func = ops_named(module, ("func.func",))[0]
    args = list(func.regions[0].blocks[0].arguments)
    ivs = {a: values.get(i, i * GLOBAL) for i, a in enumerate(args)}
    seen: Counter = Counter()
    accesses = [a for o in ops_named(module, OPS) if (a := access(o, kind)) is not None]
    assert accesses
    for t in range(THREADS):
        ev = Evaluator((t, 0, 0), ivs)
        for op, pointer, width, predicate in accesses:
            if not taken(op, ev) or (predicate is not None and not ev.value(predicate)):
                continue
            arg, byte = divmod(ev.value(pointer), GLOBAL)
            seen[(arg, byte, width)] += 1
    return seen


OPS = ("llvm.load", "llvm.store", "llvm.inline_asm")
ASM = re.compile(r"@\$(\d+) (ld|st)\.global(\.v(\d))?\.b32 (.*)")


def access(op: ir.Operation, kind: str) -> tuple | None:
    """(op, pointer, bytes, predicate or None) of a global f32 access of `kind`, else None."""
    if op.name == "llvm.inline_asm":
        m = ASM.fullmatch(ir.StringAttr(op.attributes["asm_string"]).value)
        if m is None or m.group(2) != kind:
            return None
        operands = list(op.operands)
        width = 4 * int(m.group(4) or 1)
        pointer = operands[0] if kind == "st" else operands[-2]
        return op, pointer, width, operands[int(m.group(1)) - (kind == "ld") * width // 4]
    if (op.name == "llvm.store") != (kind == "st"):
        return None
    pointer = op.operands[1] if kind == "st" else op.operands[0]
    if "ptr<1>" not in str(pointer.type):
        return None
    value = op.operands[0] if kind == "st" else op.results[0]
    width = 4 if str(value.type) == "f32" else int(str(value.type)[7:-5]) * 4
    return op, pointer, width, None


def elements(seen: Counter, arg: int) -> Counter:
    """The f32 elements of argument `arg` the accesses touched, with how often."""
    out: Counter = Counter()
    for (a, byte, width), n in seen.items():
        if a == arg:
            for e in range(width // 4):
                out[byte // 4 + e] += n
    return out


def test_reductions_of_an_accumulator_are_stored_once_each(tmp_path: Path) -> None:
    """Rows into L (a vector of M = 50 of the 64 rows: the rest are past its end), columns
    into row 1 of C: each element by exactly one thread."""
    module = lowered(tmp_path, REDUCTIONS)
    args = [
        a.get_name() for a in ops_named(module, ("func.func",))[0].regions[0].blocks[0].arguments
    ]
    assert len(args) == 5  # Q, K, L, C and M
    stores = touched(module, "st", {4: 50})
    assert elements(stores, 2) == Counter(range(50))  # L[0 .. 49], once each
    assert elements(stores, 3) == Counter(range(64, 128))  # C[1, :], once each


def test_a_range_of_rows_bounds_its_tiles(tmp_path: Path) -> None:
    """Rows 7 .. 50 of X (44 rows): its tile 1 is the range's rows 32 .. 63, X's 39 .. 70, of
    which 39 .. 50 are in the range; loads and stores touch those, every element once. Rows
    7 .. 149 of X's 100: tile 1 is whole, tile 2 (X's rows 71 .. 102) ends at X's end."""
    module = lowered(tmp_path, WINDOW)
    values = {2: 7, 3: 50, 4: 1, 5: 100}  # lo, hi, t, T (X's and Y's row stride is 64)
    want = Counter(range(39 * 64, 51 * 64))
    assert elements(touched(module, "st", values), 1) == want
    assert elements(touched(module, "ld", values), 0) == want
    values[3] = 149
    assert elements(touched(module, "st", values), 1) == Counter(range(39 * 64, 71 * 64))
    values[4] = 2
    want = Counter(range(71 * 64, 100 * 64))
    assert elements(touched(module, "st", values), 1) == want
    assert elements(touched(module, "ld", values), 0) == want
