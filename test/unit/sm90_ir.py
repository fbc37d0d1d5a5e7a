"""Test helpers for the SM90 path: compile a build once, read what its source declares (the
`tile` stage), and run the kernel of its `gpu` stage on concrete launch values: every thread
of a block at once, scf.if and scf.for followed as the threads would follow them, each op of
interest handed to a visitor that can evaluate its operands for the threads that run it.

Values are `tilec.bank_lanes.BlockLanes` lanes (a numpy vector over the block's threads, an int
where they agree) seeded with the launch: the kernel's arguments, block and cluster indices.
Nothing here knows how the SM90 lowering is written; it reads the IR's ops only."""

from __future__ import annotations

import functools
from collections import ChainMap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from mlir import ir

from tilec import binding
from tilec import layout as L
from tilec.bank_lanes import BlockLanes, Lanes
from tilec.bank_ops import Expr, expr_of
from tilec.build import KernelInfo, kernels_of
from tilec.dialects.tile.types import MmaType, TensorType, view_root
from tilec.driver import CompileOptions, compile_file
from tilec.gpu_facts import tma_descriptors
from tilec.runtime.formula import evaluate
from tilec.runtime.params import TmaDescriptor

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WARPGROUP = 128
REMOTE = 1 << 30  # a shared address in another block of the cluster: REMOTE + rank << 24 + addr
MAX_DEPTH = 400
POINTER = 1 << 40  # kernel tensor k (in argument order) starts at (k + 1) << 40


def name_of(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["name"]).value


@dataclass(frozen=True)
class Source:
    """What the source declares, read off the `tile` stage (before any lowering): the shared
    buffers' layouts, which tensor each copy<tma> fills which buffer from and in which
    local_tile shape, the gemm's operand buffers, the MMA's tiling over warp groups and the
    accumulator's block shape."""

    buffers: dict[str, L.Layout | L.ComposedLayout]
    elem_bytes: dict[str, int]
    fills: dict[str, str]  # tensor -> buffer
    tiles: dict[str, tuple[int, ...]]  # tensor -> local_tile shape of its copy
    operands: tuple[str, str]  # gemm(mma, A buffer, B buffer, acc)
    tiling: tuple[int, int]  # warp groups along m, n
    block: tuple[int, int]  # the accumulator, BM x BN
    atom: tuple[int, int, int]  # wgmma m, n, k

    @staticmethod
    def read(module: ir.Module) -> Source:
        ops: list[ir.Operation] = []
        binding.walk(module.operation, ops.append)
        buffers, elem_bytes, fills, tiles = {}, {}, {}, {}
        operands, tiling, block, atom = ("", ""), (0, 0), (0, 0), (0, 0, 0)
        for op in ops:
            if op.name == "tile.alloc_shared":
                t = TensorType.of(op.results[0].type)
                buffers[name_of(op)] = t.layout_value()
                elem_bytes[name_of(op)] = {"f16": 2, "bf16": 2, "f32": 4}[t.elem]
            elif op.name == "tile.copy" and ir.StringAttr(op.attributes["atom"]).value == "tma":
                tensor = name_of(view_root(op.operands[0]))
                fills[tensor] = name_of(view_root(op.operands[1]))
                tiles[tensor] = tuple(ir.DenseI64ArrayAttr(op.operands[0].owner.attributes["tile"]))
            elif op.name == "tile.gemm":
                operands = tuple(name_of(view_root(v)) for v in op.operands[1:3])
            elif op.name == "tile.tiled_mma":
                mma = MmaType.of(op.results[0].type)
                tiling = tuple(L.parse_int_tuple(mma.tiling))[:2]
                m, n, k = mma.atom.split("_")[1].split(".")[0].split("x")
                atom = (int(m), int(n), int(k))
            elif op.name == "tile.fragment":
                block = tuple(ir.DenseI64ArrayAttr(op.attributes["block_shape"]))
        return Source(buffers, elem_bytes, fills, tiles, operands, tiling, block, atom)

    def buffer_of(self, tensor: str) -> str:
        return self.fills[tensor]

    def loaded_into(self, buffer: str) -> str:
        return next(t for t, b in self.fills.items() if b == buffer)


@dataclass
class Build:
    """One compiled build: its `gpu` stage kernel, the tensor maps it takes (in argument
    order, as the runtime reads them), its parameters and what its source declares."""

    module: ir.Module
    kernel: ir.Operation
    maps: tuple[TmaDescriptor, ...]
    params: dict[str, str]
    source: Source
    info: KernelInfo

    def table(self, buffer: str) -> np.ndarray:
        """[rows, cols]: the byte offset the source's layout gives each element of `buffer`."""
        return layout_table(self.source.buffers[buffer]) * self.source.elem_bytes[buffer]

    @property
    def threads(self) -> int:
        return int(list(ir.DenseI32ArrayAttr(self.kernel.attributes["known_block_size"]))[0])

    def arguments(self) -> dict[str, ir.Value]:
        """The kernel's named arguments, then its trailing tensor maps by map name."""
        args = list(self.kernel.regions[0].blocks[0].arguments)
        names = [ir.StringAttr(a).value for a in self.kernel.attributes["tile.arg_names"]]
        named = dict(zip(names, args, strict=False))
        named.update({m.name: a for m, a in zip(self.maps, args[-len(self.maps) :], strict=True)})
        return named

    def view(self, tensor: str, sizes: dict[str, int]) -> tuple[tuple, tuple, str]:
        """(shape, strides in elements, dtype) of a kernel tensor as the manifest gives them."""
        p = next(p for p in self.info.params if p.name == tensor)
        symbols = {**self.info.constants, **sizes}
        shape = tuple(evaluate(d, symbols) for d in p.shape)
        if p.strides is None:
            return shape, tuple(int(np.prod(shape[k + 1 :])) for k in range(len(shape))), p.dtype
        return shape, tuple(evaluate(d, symbols) for d in p.strides), p.dtype

    def pointer(self, tensor: str) -> int:
        """The address `Launch` gives kernel tensor `tensor`."""
        return ([p.name for p in self.info.params].index(tensor) + 1) * POINTER

    def map_of(self, descriptor: ir.Value) -> TmaDescriptor:
        args = list(self.kernel.regions[0].blocks[0].arguments)
        return self.maps[args.index(descriptor) - (len(args) - len(self.maps))]


@functools.cache
def layout_table(layout: L.Layout | L.ComposedLayout) -> np.ndarray:
    """[rows, cols]: layout(row, col). A layout is the sum of its modes' images, and a
    composed one outer(offset + inner): the algebra is called once per row and per column
    (then checked against the algebra on a diagonal)."""
    inner, outer, offset = layout, None, 0
    if isinstance(layout, L.ComposedLayout):
        inner, outer, offset = layout.inner, layout.outer, layout.offset
    rows, cols = L.size(layout, 0), L.size(layout, 1)
    down = np.array([inner(r, 0) for r in range(rows)], dtype=np.int64)
    across = np.array([inner(0, c) for c in range(cols)], dtype=np.int64)
    table = offset + down[:, None] + across[None, :]
    table = table if outer is None else outer(table)
    for r in range(rows):
        assert table[r, r * 7 % cols] == layout(r, r * 7 % cols)
    return table


@functools.cache
def _compiled(example: str, defines: tuple[tuple[str, str], ...]) -> Build:
    path = str(EXAMPLES / f"{example}.tile")
    gpu = compile_file(path, CompileOptions(emit="gpu", params=dict(defines))).value
    tile = compile_file(path, CompileOptions(emit="tile", params=dict(defines))).value
    kernels: list[ir.Operation] = []
    binding.walk(gpu.operation, lambda o: kernels.append(o) if o.name == "gpu.func" else None)
    (kernel,) = kernels
    params = {a.name: str(a.attr).split(":")[0].strip() for a in kernel.attributes["tile.params"]}
    maps = tma_descriptors(gpu)[ir.StringAttr(kernel.attributes["sym_name"]).value]
    (info,) = kernels_of(tile)
    return Build(gpu, kernel, maps, params, Source.read(tile), info)


def build(example: str, **defines: int | str) -> Build:
    """The build of `examples/<example>.tile` with `-D` defines, compiled once per process."""
    return _compiled(example, tuple(sorted((k, str(v)) for k, v in defines.items())))


@dataclass(frozen=True)
class Launch:
    """Concrete launch values: the sizes, `grid` blocks, which block runs, and which of the
    optional tensor maps the runtime made (the others are null pointers)."""

    sizes: dict[str, int]
    grid: int
    block: int = 0
    cluster: int = 1
    unmade: frozenset[str] = frozenset()

    def seeds(self, b: Build) -> dict[ir.Value, int]:
        args = b.arguments()
        seeds: dict[ir.Value, int] = {}
        for p in b.info.params:
            if p.kind == "tensor":
                seeds[args[p.name]] = b.pointer(p.name)
            elif p.kind == "size":
                seeds[args[p.name]] = self.sizes[p.name]
        for k, m in enumerate(b.maps):
            seeds[args[m.name]] = 0 if m.name in self.unmade else (k + 1) << 44

        rank = self.block % self.cluster
        values = {
            "gpu.block_id": self.block,
            "gpu.grid_dim": self.grid,
            "nvvm.read.ptx.sreg.cluster.ctarank": rank,
        }

        def visit(op: ir.Operation) -> None:
            if op.name in values:
                seeds[op.results[0]] = values[op.name]

        binding.walk(b.kernel, visit)
        return seeds


class SeededLanes(BlockLanes):
    """BlockLanes for threads `tid` (a vector, or an int: one thread, exact Python ints), the
    launch's values as constants; `gpu.shuffle` (idx, from a lane the op names) reads that
    lane of the warp; `nvvm.mapa` a shared address in block `rank` of the cluster."""

    def __init__(self, tid: np.ndarray | int, seeds: dict[ir.Value, int]) -> None:
        super().__init__((1, 1, 1), 1, MAX_DEPTH)
        self.tid = (tid, 0, 0)
        self.seeds = seeds

    def expr(self, v: ir.Value) -> Expr:
        e = self.exprs.get(v)
        if e is None:
            e = Expr("const", data=self.seeds[v]) if v in self.seeds else expr_of(v)
            if e.kind == "unknown" and not isinstance(v, ir.BlockArgument):
                e = special(ir.OpResult(v).owner)
            self.exprs[v] = e
        return e

    def _eval(self, e: Expr, v: ir.Value, ivs: dict, memo: dict) -> Lanes:
        if e.kind == "nvvm.mapa":
            address, rank = (self.value(x, ivs, memo) for x in e.args)
            return REMOTE + (rank << 24) + address
        if e.kind == "gpu.shuffle":
            assert e.data.endswith("idx>"), e.data
            x = self.value(e.args[0], ivs, memo)
            lane = self.value(e.args[1], ivs, memo)
            tid = self.tid[0]
            source = tid - tid % 32 + lane
            if isinstance(tid, int):  # one thread: the source lane's value, evaluated alone
                return SeededLanes(int(source), self.seeds).value(e.args[0], ivs, {})
            return np.asarray(x)[source] if not isinstance(x, int) else x
        return super()._eval(e, v, ivs, memo)


def special(op: ir.Operation) -> Expr:
    """What `bank_ops.expr_of` leaves unknown and these kernels compute."""
    if op.name == "arith.constant" and isinstance(op.attributes["value"], ir.BoolAttr):
        return Expr("const", data=int(ir.BoolAttr(op.attributes["value"]).value))
    if op.name == "arith.ceildivui":  # unsigned operands: as ceildivsi
        return Expr("binary", tuple(op.operands), "ceildivsi")
    if op.name == "nvvm.mapa":
        return Expr(op.name, tuple(op.operands))
    if op.name == "gpu.shuffle":
        return Expr(op.name, tuple(op.operands), str(op.attributes["mode"]))
    return Expr()


@dataclass
class At:
    """An op reached while running the kernel: the threads that run it and their values."""

    op: ir.Operation
    threads: np.ndarray  # thread indices
    run: Run
    ivs: dict[ir.Value, int]
    memo: ChainMap
    loops: tuple[int, ...]  # the enclosing scf.for ivs' values, outermost first

    def values(self, v: ir.Value) -> np.ndarray:
        """`v` for each thread in `threads`."""
        x = self.run.lanes.value(v, self.ivs, self.memo)
        return np.broadcast_to(np.asarray(x, dtype=np.int64), (self.run.size,))[self.threads]

    def value(self, v: ir.Value) -> int:
        """`v`, the same for every thread that runs the op (checked)."""
        x = self.values(v)
        assert (x == x[0]).all(), (self.op.name, v, x)
        return int(x[0])

    def exact(self, v: ir.Value, tid: int) -> int:
        """`v` for thread `tid` in exact integers (a matrix descriptor's 64 bits)."""
        return self.run.thread(tid).value(v, self.ivs, Keyed(self.memo, tid))


@dataclass
class Keyed:
    """One thread's entries in a block's memo (keys (tid, value)): they live as long as the
    loop iteration's values do."""

    memo: ChainMap
    tid: int

    def __contains__(self, v: ir.Value) -> bool:
        return (self.tid, v) in self.memo

    def __getitem__(self, v: ir.Value) -> Lanes:
        return self.memo[self.tid, v]

    def __setitem__(self, v: ir.Value, x: Lanes) -> None:
        self.memo[self.tid, v] = x


@dataclass
class Run:
    """Runs `build`'s kernel for one block of `launch`: `visit(At)` for every op `wanted`
    picks, in program order (each thread's ops in its own order)."""

    build: Build
    launch: Launch
    wanted: Callable[[ir.Operation], bool]
    visit: Callable[[At], None]
    seeds: dict[ir.Value, int] = field(init=False)

    def __post_init__(self) -> None:
        self.seeds = self.launch.seeds(self.build)
        self.size = self.build.threads
        self.lanes = SeededLanes(np.arange(self.size, dtype=np.int64), self.seeds)
        self.threads: dict[int, SeededLanes] = {}

    def thread(self, tid: int) -> SeededLanes:
        """The evaluator of thread `tid` alone, in exact Python integers."""
        if tid not in self.threads:
            self.threads[tid] = SeededLanes(tid, self.seeds)
        return self.threads[tid]

    def __call__(self) -> None:
        everyone = np.ones(self.size, dtype=bool)
        self.block(self.build.kernel.regions[0].blocks[0], everyone, {}, ChainMap(), ())

    def block(
        self, block: ir.Block, mask: np.ndarray, ivs: dict, memo: ChainMap, loops: tuple
    ) -> None:
        for o in block.operations:
            op = o.operation
            if op.name == "scf.if":
                self.branch(op, mask, ivs, memo, loops)
            elif op.name == "scf.for":
                self.loop(op, mask, ivs, memo, loops)
            elif op.name in ("scf.while", "scf.execute_region", "scf.parallel"):
                raise AssertionError(f"{op.name} is not followed by this runner")
            elif self.wanted(op):
                self.visit(At(op, np.flatnonzero(mask), self, ivs, memo, loops))

    def branch(self, op: ir.Operation, mask: np.ndarray, ivs: dict, memo: ChainMap, loops) -> None:
        cond = np.broadcast_to(np.asarray(self.lanes.value(op.operands[0], ivs, memo)), mask.shape)
        taken = mask & (cond != 0)
        if taken.any():
            self.block(op.regions[0].blocks[0], taken, ivs, memo, loops)
        other = mask & (cond == 0)
        if other.any() and len(op.regions[1].blocks):
            self.block(op.regions[1].blocks[0], other, ivs, memo, loops)

    def loop(self, op: ir.Operation, mask: np.ndarray, ivs: dict, memo: ChainMap, loops) -> None:
        at = At(op, np.flatnonzero(mask), self, ivs, memo, loops)
        lb, ub, step = (at.value(v) for v in list(op.operands)[:3])
        body = op.regions[0].blocks[0]
        for i in range(lb, ub, step):
            inner = {**ivs, body.arguments[0]: i}
            self.block(body, mask, inner, memo.new_child(), (*loops, i))


def collect(
    b: Build, launch: Launch, wanted: Callable[[ir.Operation], bool], keep: Callable[[At], object]
) -> list:
    """`keep(at)` of every wanted op the block runs, in program order."""
    found: list = []
    Run(b, launch, wanted, lambda at: found.append(keep(at)))()
    return found


def leading(b: Build, sizes: dict[str, int]) -> dict[str, int]:
    """`sizes` with A's and B's leading dimensions where the kernel binds them (gemm_sm90.tile's
    lda, ldb: whole rows, K for a K-major operand, M or N for an MN-major one)."""
    names = {x.name for x in b.info.params}
    if "L" in names or "lda" not in names:
        return sizes
    mn = {k: int(b.params.get(k, "0")) for k in ("MA", "MB")}
    lda = sizes["M"] if mn["MA"] else sizes["K"]
    ldb = sizes["N"] if mn["MB"] else sizes["K"]
    return {**sizes, "lda": lda, "ldb": ldb}


def launches(b: Build) -> list[Launch]:
    """The blocks of one cluster on a small problem: two output tiles a block (along n), each
    K loop STAGES + 3 k-tiles long (the ring wraps), whole tiles (one cluster of blocks); a
    batched GEMM's batch of 3."""
    p = {k: int(v) for k, v in b.params.items() if v.lstrip("-").isdigit()}
    cluster = p.get("CM", 1)
    m, n = p["BM"] * cluster, 2 * p["BN"]
    if p.get("SW"):  # C^T = B A^T: B's rows along wgmma's m, C's rows along its n
        m, n = p["BN"], 2 * p["BM"] * cluster
    k = p["BK"] * (p["STAGES"] + 3)
    sizes = leading(b, {"M": m, "N": n, "K": k})
    if "L" in {x.name for x in b.info.params}:  # the batched GEMM: 3 batches, whole rows
        mn = {x: int(b.params.get(x, "0")) for x in ("MA", "MB")}  # MN-major: ld = M (N)
        lda, ldb = m if mn["MA"] else k, n if mn["MB"] else k
        sizes.update(L=3, sa=m * k, lda=lda, sb=n * k, ldb=ldb, sc=m * n, ldc=n)
    return [Launch(sizes, cluster, c, cluster) for c in range(cluster)]


# The builds the SM90 tests share (each compiled once per process), by a short name.
BUILDS: dict[str, tuple[str, dict[str, int | str]]] = {
    "BK=64": ("gemm_sm90", {}),
    "BK=32": ("gemm_sm90", {"BK": 32}),
    "BK=16": ("gemm_sm90", {"BK": 16, "STAGES": 8}),
    "MN": ("gemm_sm90", {"MA": 1, "MB": 1}),
    "MN,BK=32": ("gemm_sm90", {"MA": 1, "MB": 1, "BK": 32}),
    "PP": ("gemm_sm90", {"PP": 1, "BN": 128, "STAGES": 5}),
    "PP,MA,BK=16": ("gemm_sm90", {"MA": 1, "PP": 1, "BN": 128, "BK": 16, "STAGES": 7}),
    "CM=2": ("gemm_sm90", {"CM": 2}),
    "CM=2,MB": ("gemm_sm90", {"CM": 2, "MB": 1}),
    "SW,BN=16": ("gemm_sm90", {"SW": 1, "BN": 16, "STAGES": 8}),
    "SW,PP": ("gemm_sm90", {"SW": 1, "PP": 1, "BM": 64, "BN": 128, "STAGES": 6}),
    "O=f32": ("gemm_sm90", {"O": "f32"}),
    "PP,O=f32": ("gemm_sm90", {"PP": 1, "BN": 128, "O": "f32", "STAGES": 5}),
    "batched": ("gemm_sm90_batched", {}),
    "batched,MB": ("gemm_sm90_batched", {"MB": 1}),
    "batched,MN,PP": ("gemm_sm90_batched", {"MA": 1, "MB": 1, "PP": 1, "BN": 128}),
    "bias_act": ("gemm_sm90_bias_act", {}),
    "bias_act,PP": ("gemm_sm90_bias_act", {"PP": 1, "BN": 128}),
}


def named(key: str) -> Build:
    example, defines = BUILDS[key]
    return build(example, **defines)
