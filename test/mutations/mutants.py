# ruff: noqa: E501  (a mutant holds an exact source line, as long as it is)
"""A mutation campaign over the compiler (not part of CI): plausible one-line mutations, each
applied to a separate copy of the repository, the CPU suite run against it (the PTX lock left
out), killed or survived recorded, the line restored.

    git -C /work/main worktree add /work/mut HEAD       # a copy of one's own, never the main one
    python3 -m venv /work/venv-mut && . /work/venv-mut/bin/activate && pip install -e "/work/mut[test]"
    python test/mutations/mutants.py --repo /work/mut [--only N,M] [--out results.json]

Each mutant is (file, the exact old text, its replacement, what it breaks); the old text must
occur exactly once in the file. A mutant is killed when `pytest -x test/unit` or `lit test
--filter-out ptx/lock` fails; the first failing test is recorded.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mutant:
    file: str
    old: str
    new: str
    what: str


MUTANTS = [
    # --- dialects/layout: the algebra ---
    Mutant(
        "dialects/layout/core.py",
        "return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))",
        "return ((1 << self.bits) - 1) << (self.base + max(0, self.shift) + 1)",
        "swizzle yyy mask one bit too high",
    ),
    Mutant(
        "dialects/layout/int_tuple.py",
        "        crd.append(idx2crd(idx % n, s))\n        idx //= n",
        "        crd.append(idx2crd(idx % n, s))\n        idx //= max(n - 1, 1)",
        "idx2crd: colex carry off by one",
    ),
    Mutant(
        "dialects/layout/compose.py",
        "        shapes.append(d // cur)\n        strides.append(cur)",
        "        shapes.append(d // cur + 1)\n        strides.append(cur)",
        "complement: a gap one element too long",
    ),
    Mutant(
        "dialects/layout/tiling.py",
        "    return make_layout(x, composition(complement(x, size(x) * cosize(t)), t))",
        "    return make_layout(x, composition(complement(x, cosize(x) * cosize(t)), t))",
        "logical_product: complement's cotarget from cosize(x)",
    ),
    Mutant(
        "dialects/layout/core.py",
        "        return self.outer(self.offset + self.inner(*crd))",
        "        return self.outer(self.inner(*crd)) + self.offset",
        "ComposedLayout: offset added after the swizzle",
    ),
    # --- passes/ ---
    Mutant(
        "passes/convert_layout_to_arith.py",
        "                    result = b.add(result, layout.offset)",
        "                    result = b.add(result, 0)",
        "convert-layout-to-arith drops the composition's offset",
    ),
    Mutant(
        "passes/convert_layout_to_arith.py",
        "                    abs(d) if isinstance(d, int) else d,",
        "                    d if isinstance(d, int) else d,",
        "cosize lowering: negative strides not abs'ed",
    ),
    Mutant(
        "passes/convert_layout_to_arith.py",
        "            coords.append(rest if k == len(shape) - 1 else b.rem(rest, s))",
        "            coords.append(b.rem(rest, s))",
        "idx2crd lowering: last mode wraps (no linear extension)",
    ),
    # --- lowering/ shared (SM80 + SM90) ---
    Mutant(
        "lowering/__init__.py",
        "        return arith.XOrIOp(offset, moved.result).result",
        "        return arith.OrIOp(offset, moved.result).result",
        "IndexBuilder.swizzle: or instead of xor",
    ),
    Mutant(
        "lowering/__init__.py",
        "        yyy = arith.AndIOp(offset, self.value(sw.yyy_mask)).result",
        "        yyy = arith.AndIOp(offset, self.value(sw.zzz_mask)).result",
        "IndexBuilder.swizzle masks the zzz bits",
    ),
    Mutant(
        "lowering/tile_math.py",
        "LOG2_E = 1.4426950408889634",
        "LOG2_E = 1.4426950408889",
        "exp through exp2: scale rounded in the 13th digit",
    ),
    Mutant(
        "lowering/tile_fragments.py",
        'REDUCE_OP = {"max": "max", "min": "min", "sum": "add"}',
        'REDUCE_OP = {"max": "max", "min": "max", "sum": "add"}',
        "min reductions combine with max",
    ),
    Mutant(
        "lowering/tile_reduce.py",
        "                v, constant(i32, 1 << bit), constant(i32, 32), gpu.ShuffleMode.XOR",
        "                v, constant(i32, 2 << bit), constant(i32, 32), gpu.ShuffleMode.XOR",
        "row reduction: butterfly xor distance doubled",
    ),
    Mutant(
        "lowering/tile_reduce.py",
        "    warp_mask = ((1 << thi) - 1) ^ ((1 << warp_lo) - 1)",
        "    warp_mask = ((1 << thi) - 1) ^ ((1 << (warp_lo + 1)) - 1)",
        "cross-warp reduction: one warp bit left out of the partner mask",
    ),
    Mutant(
        "lowering/tile_reduce.py",
        "    if reuse_guard:\n        gpu.BarrierOp()\n    return Reduced(part, mode, elem, groups)",
        "    return Reduced(part, mode, elem, groups)",
        "reduction in a loop: the reuse barrier dropped",
    ),
    Mutant(
        "lowering/tile_access.py",
        "        low = arith.AndIOp(bits, constant(i64, nbytes - 1)).result",
        "        low = arith.AndIOp(bits, constant(i64, nbytes // 2 - 1)).result",
        "vector-copy alignment test checks half the width",
    ),
    # --- lowering/ SM90 ---
    Mutant(
        "lowering/sm90_ring.py",
        "        parity = b.rem(b.div(counter, self.stages), 2)",
        "        parity = b.rem(b.div(counter + 1, self.stages), 2)",
        "mbarrier ring: phase parity off by one iteration",
    ),
    Mutant(
        "lowering/sm90_ring.py",
        "        flipped = arith.XOrIOp(parity, constant(ir.IntegerType.get_signless(32), 1)).result\n        self.wait(self.empty, stage, flipped, b)",
        "        self.wait(self.empty, stage, parity, b)",
        "producer waits the empty barrier on the unflipped phase",
    ),
    Mutant(
        "lowering/sm90_wgmma.py",
        "    stride_groups = 8 * rows.swizzle >> 4  # bytes between 8-row groups, in 16-byte units",
        "    stride_groups = 8 * 128 >> 4  # bytes between 8-row groups, in 16-byte units",
        "wgmma descriptor: stride byte offset of the 128-byte swizzle at every width",
    ),
    Mutant(
        "lowering/sm90_wgmma.py",
        "LAYOUT_TYPE = {128: 1, 64: 2, 32: 3}  # the descriptor's swizzle mode, bits 62-63",
        "LAYOUT_TYPE = {128: 1, 64: 3, 32: 2}  # the descriptor's swizzle mode, bits 62-63",
        "wgmma descriptor: 64- and 32-byte modes swapped",
    ),
    Mutant(
        "lowering/sm90_tma.py",
        "SWIZZLE_BYTES = {1: 32, 2: 64, 3: 128}  # a swizzle's bits -> the TMA/wgmma swizzle mode",
        "SWIZZLE_BYTES = {1: 32, 2: 128, 3: 128}  # a swizzle's bits -> the TMA/wgmma swizzle mode",
        "TMA/wgmma: the 64-byte swizzle taken as 128",
    ),
    Mutant(
        "lowering/sm90_tma.py",
        "        return elems * (self.swizzle if self.mn_major else self.elem_bytes)",
        "        return elems * (self.swizzle if self.mn_major else 2)",
        "k offset assumes 2-byte elements",
    ),
    Mutant(
        "lowering/sm90_epilogue.py",
        "    row = b.add(b.mul(b.div(t, 32), 16), b.div(lane, 4))  # and row + 8",
        "    row = b.add(b.mul(b.div(t, 32), 16), b.div(lane, 8))  # and row + 8",
        "SM90 epilogue: accumulator row from lane / 8",
    ),
    Mutant(
        "lowering/sm90_split.py",
        "        begin = b.div(b.mul(part, self.full), self.s)",
        "        begin = b.div(b.mul(part, self.full), self.s + 1)",
        "split tail: parts' k ranges overlap",
    ),
    Mutant(
        "lowering/sm90_split.py",
        '        peers = b.select(b.both(tail, b.cmp("eq", part, 0)), self.s, 1)',
        '        peers = b.select(b.both(tail, b.cmp("eq", part, 0)), self.s - 1, 1)',
        "split tail: the owner waits for one peer fewer",
    ),
    # --- compiler/frontend ---
    Mutant(
        "compiler/frontend/builtins_scalar.py",
        "        return IntV(-(-a.value // b.value), str(-(-a.value // b.value)))",
        "        return IntV(a.value // b.value, str(a.value // b.value))",
        "static cdiv floors",
    ),
    Mutant(
        "compiler/frontend/irgen_expr.py",
        "            return arith.CeilDivSIOp(a, b, loc=loc).result",
        "            return arith.FloorDivSIOp(a, b, loc=loc).result",
        "runtime cdiv floors",
    ),
    Mutant(
        "compiler/frontend/shapes.py",
        "    return all(x == y or x == 1 for x, y in zip(sa, sb, strict=True))",
        "    return all(x == y or x == 1 or y == 1 for x, y in zip(sa, sb, strict=True))",
        "broadcasting accepted both ways",
    ),
    Mutant(
        "passes/tile_async_waits.py",
        "            self.wait(op, len(self.groups) - 1)",
        "            self.wait(op, len(self.groups))",
        "cp.async wait leaves one group more in flight",
    ),
    # --- compiler/runtime ---
    Mutant(
        "compiler/runtime/formula.py",
        "    return -(-a // b)",
        "    return a // b + 1",
        "cdiv rounds up an exact quotient too",
    ),
    Mutant(
        "compiler/runtime/binding.py",
        "    if view.dtype == p.dtype:\n        return",
        "    if DTYPE_SIZES[view.dtype] == DTYPE_SIZES[p.dtype]:\n        return",
        "dtype check by element size only",
    ),
    Mutant(
        "compiler/runtime/binding.py",
        "        span += (extent - 1) * stride",
        "        span += extent * stride",
        "self-overlap: the span below counted one stride long",
    ),
    Mutant(
        "compiler/runtime/binding.py",
        "        if stride <= span:\n            return dim",
        "        if stride < span:\n            return dim",
        "self-overlap: a stride equal to the span below is allowed",
    ),
    Mutant(
        "compiler/runtime/binding.py",
        "    if any(not 1 <= b <= 256 for b in box):",
        "    if any(not 1 <= b <= 512 for b in box):",
        "TMA box extents up to 512 accepted",
    ),
    # Added after the first run (mutant 16 was a Python TypeError, not a wrong phase):
    Mutant(
        "lowering/sm90_ring.py",
        "        parity = b.rem(b.div(counter, self.stages), 2)",
        "        parity = b.rem(b.div(b.add(counter, 1), self.stages), 2)",
        "mbarrier ring: phase parity off by one iteration (well-typed)",
    ),
    # Mutants 23 and 24 were Python TypeErrors too (an OpResult + int); well-typed:
    Mutant(
        "lowering/sm90_split.py",
        "        begin = b.div(b.mul(part, self.full), self.s)",
        "        begin = b.div(b.mul(part, self.full), b.add(self.s, 1))",
        "split tail: parts' k ranges leave gaps (well-typed)",
    ),
    Mutant(
        "lowering/sm90_split.py",
        '        peers = b.select(b.both(tail, b.cmp("eq", part, 0)), self.s, 1)',
        '        peers = b.select(b.both(tail, b.cmp("eq", part, 0)), b.add(self.s, -1), 1)',
        "split tail: the owner waits for one peer fewer (well-typed)",
    ),
    # --- SM90 campaign (issue 43): the semantic CPU tests of the SM90 path; ported to the
    # ladder (tile-ring, the sm90 rungs) where the line moved ---
    Mutant(
        "lowering/sm90_epilogue.py",
        "unit = arith.XOrIOp(b.value(phase), b.value(j)).result",
        "unit = arith.AddIOp(b.value(phase), b.value(j)).result",
        "SM90 epilogue: chunk swizzle phase + j for phase ^ j",
    ),
    Mutant(
        "lowering/sm90_epilogue.py",
        "swizzled = arith.XOrIOp(b.value(unit), b.value(b.rem(row, 8))).result",
        "swizzled = arith.AddIOp(b.value(unit), b.value(b.rem(row, 8))).result",
        "SM90 epilogue fallback: copy-out swizzle + for ^",
    ),
    Mutant(
        "lowering/sm90_epilogue.py",
        "    unit_byte = b.mul(b.rem(lane, 4), 4)",
        "    unit_byte = b.mul(b.rem(lane, 4), 2)",
        "SM90 epilogue: a lane's byte in its 16-byte unit for 1-byte pairs",
    ),
    Mutant(
        "lowering/sm90_epilogue.py",
        "for c in (at[1], at[0], *reversed(self.outer))]",
        "for c in (at[0], at[1], *reversed(self.outer))]",
        "SM90 epilogue: TMA store coordinates (row, column) for (column, row)",
    ),
    Mutant(
        "lowering/sm90_epilogue.py",
        "slot = b.add(b.mul(self.group, BUFFERS * CHUNK_BYTES), (q % BUFFERS) * CHUNK_BYTES)",
        "slot = b.add(b.mul(self.group, CHUNK_BYTES), (q % BUFFERS) * CHUNK_BYTES)",
        "SM90 epilogue: the groups' chunk buffers one chunk apart (overlapping)",
    ),
    Mutant(
        "lowering/tile_mma.py",
        "m0 = b.add(m0, b.mul(b.rem(at.wm, group), AM))",
        "m0 = b.add(m0, b.mul(b.rem(at.wm, group), AM // 2))",
        "wgmma C in the rungs (register stores): a group's warps 8 rows apart for 16",
    ),
    Mutant(
        "lowering/sm90_ring.py",
        "        self.wait(self.full, stage, parity, b)",
        "        self.wait(self.full, stage, arith.XOrIOp(parity, constant(ir.IntegerType.get_signless(32), 1)).result, b)",
        "mbarrier ring: consumers wait on the full barrier with the phase flipped",
    ),
    Mutant(
        "passes/tile_ring.py",
        "self.loop_bytes[key] = self.loop_bytes.get(key, 0) + rows.bytes",
        "self.loop_bytes[key] = rows.bytes",
        "expect-tx: the stage's bytes of its last box only",
    ),
    Mutant(
        "lowering/sm90_tma.py",
        "box = [share.rows if m == mn_mode else e for m, e in enumerate(box)]",
        "box = [rows.rows if m == mn_mode else e for m, e in enumerate(box)]",
        "TMA box: a multicast box the whole tile, not the block's share",
    ),
    Mutant(
        "lowering/sm90_tma.py",
        "at = [b.add(x, c * rows.width) if m == mn_mode else x for m, x in enumerate(coords)]",
        "at = [b.add(x, c * rows.width // 2) if m == mn_mode else x for m, x in enumerate(coords)]",
        "TMA load: MN-major chunks half a chunk apart in the tensor",
    ),
    Mutant(
        "lowering/sm90_cluster.py",
        "return Share(part, chunks, b.mul(r, part), first_byte, mask)",
        "return Share(part, chunks, r, first_byte, mask)",
        "multicast: a block's share starts at row rank, not rank x share",
    ),
    Mutant(
        "lowering/sm90_cluster.py",
        "(1 << cluster) - 1).result",
        "(1 << cluster) - 2).result",
        "multicast: the mask leaves block 0 out",
    ),
    Mutant(
        "lowering/sm90_wgmma.py",
        "leading = rows.chunk_bytes >> 4 if rows.mn_major else 1",
        "leading = rows.bytes >> 4 if rows.mn_major else 1",
        "wgmma descriptor: MN-major leading byte offset the whole tile, not a chunk",
    ),
    Mutant(
        "lowering/sm90_tma.py",
        "return elems * (self.swizzle if self.mn_major else self.elem_bytes)",
        "return elems * self.elem_bytes",
        "wgmma k-step: MN-major operands advanced as K-major ones",
    ),
    Mutant(
        "lowering/tile_mma_wgmma.py",
        "a_rows = b.mul(b.rem(place, w.gm), w.mt * 64)",
        "a_rows = b.mul(b.div(place, w.gm), w.mt * 64)",
        "wgmma: a consumer group's A rows from div for rem (both groups on rows 0..63)",
    ),
    Mutant(
        "lowering/tile_mma_wgmma.py",
        "    nvvm.WgmmaWaitGroupSyncOp(1)",
        "    nvvm.WgmmaWaitGroupSyncOp(2)",
        "wgmma: two groups left in flight when the stage before is released",
    ),
    Mutant(
        "passes/tile_ring.py",
        "previous = arith.SubIOp(b.value(counter), b.value(1)).result",
        "previous = b.value(counter)",
        "mbarrier ring: the consumers release the stage they just issued",
    ),
    Mutant(
        "lowering/sm90_split.py",
        "start = b.add(b.mul(self.dp, kt), done)",
        "start = b.mul(self.dp, kt)",
        "stream-K: a segment's ring count forgets the block's segments before it",
    ),
    Mutant(
        "lowering/sm90_pingpong.py",
        "other = arith.SubIOp(b.value(self.first + 1), group).result",
        "other = arith.AddIOp(b.value(self.first), group).result",
        "ping-pong: a group hands the turn to itself",
    ),
    Mutant(
        "lowering/sm90_epilogue.py",
        '{"group": "1 : i32", "read": "unit"}',
        '{"group": "2 : i32", "read": "unit"}',
        "SM90 epilogue: a chunk buffer rewritten while its last TMA store may still read it",
    ),
    Mutant(
        "lowering/sm90_split.py",
        "address = parts.address(partials, split.block_slot(loop.induction_variable, b), b)",
        "address = parts.address(partials, split.block_slot(b.add(loop.induction_variable, 1), b), b)",
        "split tail: the owner adds the partial sums of the slot after each peer's",
    ),
]


ROOT = Path(__file__).resolve().parents[2]


def apply(repo: Path, m: Mutant) -> str:
    """Writes the mutant into `repo`; returns the original text to restore."""
    path = repo / m.file
    text = path.read_text()
    count = text.count(m.old)
    if count != 1:
        raise SystemExit(f"{m.file}: the old text occurs {count} times: {m.old!r}")
    path.write_text(text.replace(m.old, m.new))
    return text


def first_failure(output: str) -> str:
    for pattern in (r"^FAILED (\S+)", r"^ERROR (\S+)", r"^\s*FAIL: tilec :: (\S+)"):
        found = re.search(pattern, output, re.M)
        if found:
            return found.group(1)
    return output.strip().splitlines()[-1] if output.strip() else "?"


def run(cmd: list[str], repo: Path, timeout: int) -> tuple[int, str]:
    try:
        done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "timeout"
    return done.returncode, done.stdout + done.stderr


def judge(repo: Path, tests: list[str], timeout: int, lit: bool = True) -> tuple[str, str]:
    """('killed', the first failing test) or ('survived', '')."""
    py = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    rc, out = run(py, repo, timeout)
    if rc != 0:
        return "killed", first_failure(out)
    if not lit:
        return "survived", ""
    lit = ["lit", "-q", "-j", "2", "--max-failures", "1", "test", "--filter-out", "ptx/lock"]
    rc, out = run(lit, repo, timeout)
    if rc != 0:
        return "killed", first_failure(out)
    return "survived", ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, required=True, help="a copy of the repository")
    ap.add_argument("--only", default="", help="comma-separated mutant numbers")
    ap.add_argument("--tests", default="test/unit", help="pytest paths, comma-separated")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--out", type=Path, default=Path("mutation-results.json"))
    ap.add_argument("--no-lit", action="store_true", help="judge by the pytest paths alone")
    args = ap.parse_args()
    if args.repo.resolve() == ROOT:
        raise SystemExit("run mutants in a copy of the repository, never in the checkout itself")
    chosen = [int(n) for n in args.only.split(",") if n] or list(range(len(MUTANTS)))
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    for n in chosen:
        m = MUTANTS[n]
        original = apply(args.repo, m)
        start = time.time()
        try:
            verdict, by = judge(args.repo, args.tests.split(","), args.timeout, not args.no_lit)
        finally:
            (args.repo / m.file).write_text(original)
        results[str(n)] = {
            **asdict(m),
            "verdict": verdict,
            "by": by,
            "s": round(time.time() - start),
        }
        args.out.write_text(json.dumps(results, indent=1))
        print(f"{n:2d} {verdict:8s} {by:60s} {m.what}", flush=True)


if __name__ == "__main__":
    main()
