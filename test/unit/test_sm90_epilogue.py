"""The SM90 epilogue, end to end for every consumer thread: each accumulator element a thread
holds (wgmma's D fragment, `atoms.wgmma_c`, of the wgmma whose descriptors say which rows of
sA and sB it multiplied, which the producer loaded from which rows of A and B) must reach
C[i][j] of C = A·Bᵀ. Through shared chunks and TMA stores: every byte of a chunk written
once before the store that reads it, read back by the TMA store box that covers it (the map
as the runtime encodes it, the box as the hardware reads it, swizzled) into the right element
of C; through the fallback (no map: the chunk copied out element by element) and the direct
stores from registers (an f32 C, a swapped build's Cᵀ) likewise; on ragged tiles too. What
else a stored value reads (a bias, C itself, loaded like the accumulator) it reads at the
stored element's index. Every element of C the block's tiles cover is written once, none
outside C (over the grid of a split tail: by the tiles' owners only), and the chunks lie
beside the ring."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from mlir import ir
from sm90_events import events, operands, ring_spans, tensor_maps, unit_tiles
from sm90_ir import POINTER, WARPGROUP, At, Build, Launch, Run, launches, leading, named
from sm90_model import TensorMap, Wgmma, d_fragment

from tilec.bank_ops import type_bytes
from tilec.binding import op_id

SHARED, GLOBAL = "!llvm.ptr<3>", "!llvm.ptr<1>"
TMA_STORE = "nvvm.cp.async.bulk.tensor.global.shared.cta"
COMMIT, WAIT_GROUP = "nvvm.cp.async.bulk.commit.group", "nvvm.cp.async.bulk.wait_group"
# (build, whether the runtime makes C's tensor map, rows and columns C lacks of whole tiles)
CASES = [
    ("BK=64", True, 0, 0),
    ("BK=64", False, 0, 0),
    ("BK=64", True, 40, 24),
    ("BK=64", False, 40, 25),
    ("PP", True, 0, 0),
    ("PP", False, 0, 0),
    ("CM=2", True, 0, 0),
    ("MN", True, 24, 8),
    ("O=f32", True, 0, 0),
    ("O=f32", True, 7, 9),
    ("PP,O=f32", True, 0, 0),
    ("SW,BN=16", True, 3, 40),
    ("SW,PP", True, 0, 0),
    ("batched", True, 0, 0),
    ("bias_act", True, 0, 0),
    ("bias_act,PP", False, 8, 3),
]


def accumulator_of(v: ir.Value) -> ir.Operation | None:
    """The wgmma whose result (its accumulator struct) `v` is, else None."""
    if isinstance(v, ir.BlockArgument):
        return None
    op = ir.OpResult(v).owner
    return op if op.name == "nvvm.wgmma.mma_async" else None


@dataclass
class Sources:
    """What scalars are computed from, through loops' results and iter_args (the K loop's
    accumulator registers, the split tail's sums) and branches: `leaf(op, value)` names the
    sources an op is (a set), or None to look through its operands."""

    leaf: Callable[[ir.Operation, ir.Value], frozenset | None]
    memo: dict[ir.Value, frozenset] = field(default_factory=dict)

    def __call__(self, v: ir.Value) -> frozenset:
        if v in self.memo:
            return self.memo[v]
        self.memo[v] = frozenset()  # (a value never depends on itself through these)
        if isinstance(v, ir.BlockArgument):
            loop = v.owner.owner
            found = frozenset()
            if loop.name == "scf.for" and v.arg_number > 0:  # an iter_arg: its initial value
                found = self(loop.operands[3 + v.arg_number - 1])
        else:
            op = ir.OpResult(v).owner
            found = self.leaf(op, v)
            if found is None and op.name in ("scf.for", "scf.if"):
                ends = [list(r.blocks[0].operations)[-1] for r in op.regions if len(r.blocks)]
                found = frozenset().union(*(self(y.operands[v.result_number]) for y in ends))
            elif found is None:
                found = frozenset().union(*(self(x) for x in op.operands))
        self.memo[v] = found
        return found


def register_of(op: ir.Operation, v: ir.Value) -> frozenset | None:
    """An accumulator register: (op_id of its wgmma, position)."""
    if op.name == "llvm.load":
        return frozenset()
    if op.name != "llvm.extractvalue" or accumulator_of(op.operands[0]) is None:
        return None
    position = list(ir.DenseI64ArrayAttr(op.attributes["position"]))[0]
    return frozenset({(op_id(accumulator_of(op.operands[0])), position)})


def global_load_of(op: ir.Operation, v: ir.Value) -> frozenset | None:
    """An element a global load reads: (the load, its lane)."""
    if op.name == "llvm.extractelement":
        source = op.operands[0]
        owner = None if isinstance(source, ir.BlockArgument) else ir.OpResult(source).owner
        if owner is not None and owner.name == "llvm.load":
            if str(owner.operands[0].type) != GLOBAL:
                return frozenset()
            position = ir.IntegerAttr(ir.OpResult(op.operands[1]).owner.attributes["value"])
            return frozenset({(owner, position.value)})
    if op.name == "llvm.load":
        return frozenset({(op, 0)}) if str(op.operands[0].type) == GLOBAL else frozenset()
    return frozenset() if op.name == "llvm.extractvalue" else None


def lanes_of(v: ir.Value) -> list[ir.Value]:
    """The scalars of a stored value, lane by lane."""
    if not isinstance(v.type, ir.VectorType):
        return [v]
    lanes: dict[int, ir.Value] = {}
    while not isinstance(v, ir.BlockArgument):
        op = ir.OpResult(v).owner
        if op.name != "llvm.insertelement":
            break
        op = op.opview
        position = ir.OpResult(op.position).owner.attributes["value"]
        lanes.setdefault(ir.IntegerAttr(position).value, op.value)
        v = op.vector
    return [lanes[k] for k in range(ir.VectorType(v.type).shape[0])]


@dataclass
class Epilogue:
    """One block's consumers' stores, followed byte by byte in program order: `smem` holds,
    per shared byte, 1 + the padded linear index of the C element written there (0: none)."""

    b: Build
    rows: dict[tuple[int, int], tuple[int, int]]  # (wgmma, group) -> (sA, sB) rows of its D
    tiles: dict[int, dict[str, tuple]]  # unit -> tensor -> (outer..., tile along its rows)
    c: TensorMap  # C's map (its dims, innermost first, give the tensor's shape)
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    ring: list[tuple[int, int]]  # shared spans of the ring's slots and barriers
    base: int
    smem: np.ndarray = field(default_factory=lambda: np.zeros(1 << 18, dtype=np.int64))
    loaded: dict[int, np.ndarray] = field(default_factory=dict)
    # per issuing thread: its bulk async-groups (the last one open), each the shared bytes
    # its TMA stores still read
    reading: dict[int, list[list[np.ndarray]]] = field(default_factory=dict)
    written: Counter = field(default_factory=Counter)
    tensors: dict[int, tuple[int, ...]] = field(default_factory=dict)  # address -> strides
    registers: Sources = field(default_factory=lambda: Sources(register_of))
    loads: Sources = field(default_factory=lambda: Sources(global_load_of))

    def code(self, index: np.ndarray) -> np.ndarray:
        flat = np.zeros(len(index), dtype=np.int64)
        for mode, extent in enumerate(self.shape):
            flat = flat * (extent + 512) + index[:, mode]
        return flat + 1

    def c_index(self, unit: int, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """C's index of the D element (sA row x, sB row y) of `unit`: sA holds A's rows (B's
        in a swapped build), C = A·Bᵀ."""
        tiles, source = self.tiles[unit], self.b.source
        first = {t: tiles[t][-1] * source.tiles[t][0] for t in tiles}
        swapped = source.loaded_into(source.operands[0]) != "A"
        i, j = (y, x) if swapped else (x, y)
        outer = np.tile(np.array(tiles["A"][:-1], dtype=np.int64), (len(x), 1))
        return np.column_stack([outer, i + first["A"], j + first["B"]])

    def held(self, at: At, v: ir.Value) -> np.ndarray:
        """[threads, lanes]: the code of the C element each lane of `v` holds per thread."""
        columns = []
        for lane in lanes_of(v):
            owner = None if isinstance(lane, ir.BlockArgument) else ir.OpResult(lane).owner
            if owner is not None and owner.name == "llvm.load":  # a copy of shared bytes
                columns.append(self.loaded[op_id(owner)][at.threads])
                continue
            (found,) = self.registers(lane)
            index = np.zeros((len(at.threads), len(self.shape)), dtype=np.int64)
            for g in np.unique(at.threads // WARPGROUP):
                mine = at.threads // WARPGROUP == g
                ra, rb, n = self.rows[found[0], int(g)]
                rc = d_fragment(n)[at.threads[mine] % WARPGROUP, found[1]]
                index[mine] = self.c_index(at.loops[0], rc[:, 0] + ra, rc[:, 1] + rb)
            self.check_operands(at, lane, index)
            columns.append(self.code(index))
        return np.stack(columns, axis=1)

    def check_operands(self, at: At, lane: ir.Value, index: np.ndarray) -> None:
        """Each element of another tensor the lane's value reads (a bias, C itself: loaded
        `like = acc`) is the element at the stored one's index, for every thread."""
        inside = ((index >= 0) & (index < self.shape)).all(axis=1)
        for load, position in self.loads(lane):
            t = load.results[0].type
            eb = type_bytes(ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t)
            got = at.values(load.operands[0])[inside] + position * eb
            base = got[0] - got[0] % POINTER
            strides = self.tensors[int(base)]
            want = base + (index[inside] * np.array(strides)).sum(axis=1) * eb
            wrong = np.flatnonzero(got != want)
            assert not wrong.size, ("an operand read at another element", index[inside][wrong[0]])

    def visit(self, at: At) -> None:
        op = at.op
        if op.name == TMA_STORE:
            self.tma_store(at)
        elif op.name in (COMMIT, WAIT_GROUP):
            self.bulk_group(at)
        elif op.name == "llvm.store" and str(op.operands[1].type) == SHARED:
            self.shared_store(at)
        elif op.name == "llvm.store" and str(op.operands[1].type) == GLOBAL:
            self.global_store(at)
        elif op.name == "llvm.load" and str(op.operands[0].type) == SHARED:
            self.shared_load(at)

    def shared_store(self, at: At) -> None:
        value = at.op.operands[0]
        codes = self.held(at, value)
        eb = type_bytes(value.type) // codes.shape[1]
        idx = element_bytes(at.values(at.op.operands[1]), codes.shape[1], eb)
        for lo, hi in self.ring:
            assert not ((idx >= lo) & (idx < hi)).any(), ("a chunk byte in the ring", lo, hi)
        assert np.unique(idx).size == idx.size, "two threads write one byte"
        assert (self.smem[idx] == 0).all(), "a chunk byte written twice before it is stored"
        busy = [a for t in self.reading.values() for group in t for a in group]
        assert not busy or not np.isin(idx, np.concatenate(busy)).any(), "a TMA store reads it"
        self.smem[idx] = codes[:, :, None]

    def shared_load(self, at: At) -> None:
        eb = type_bytes(at.op.results[0].type)
        idx = element_bytes(at.values(at.op.operands[0]), 1, eb)[:, 0]
        got = self.smem[idx]
        assert (got[:, 0] != 0).all() and (got == got[:, :1]).all(), "reads unwritten bytes"
        full = np.zeros(at.run.size, dtype=np.int64)
        full[at.threads] = got[:, 0]
        self.loaded[op_id(at.op)] = full
        self.smem[idx] = 0

    def global_store(self, at: At) -> None:
        value = at.op.operands[0]
        codes = self.held(at, value)
        eb = type_bytes(value.type) // codes.shape[1]
        address = at.values(at.op.operands[1])
        for lane in range(codes.shape[1]):
            offset = address + lane * eb - self.base
            assert (offset % eb == 0).all()
            index = unravel(offset // eb, self.shape, self.strides)
            assert ((index >= 0) & (index < self.shape)).all(), "a store outside C"
            want = self.code(index)
            wrong = np.flatnonzero(codes[:, lane] != want)
            assert not wrong.size, ("stored to the wrong element of C", index[wrong[0]])
            self.written.update(want.tolist())

    def tma_store(self, at: At) -> None:
        op = at.op.opview
        sources = at.values(op.srcMem)
        coords = np.stack([at.values(c) for c in op.coordinates], axis=1)
        for thread, src, at_c in zip(at.threads, sources, coords, strict=True):
            index, address = self.c.writes(at_c.tolist(), int(src))
            got = self.smem[element_bytes(address, 1, self.c.elem)[:, 0]]
            assert (got[:, 0] != 0).all() and (got == got[:, :1]).all(), "box bytes unwritten"
            inside = ((index >= 0) & (index < self.shape)).all(axis=1)
            want = self.code(index[inside])
            wrong = np.flatnonzero(got[inside, 0] != want)
            assert not wrong.size, ("the box stores an element elsewhere", index[inside][wrong[0]])
            self.written.update(want.tolist())
            read = element_bytes(address, 1, self.c.elem)[:, 0].reshape(-1)
            self.smem[read] = 0
            self.reading.setdefault(int(thread), [[]])[-1].append(read)

    def bulk_group(self, at: At) -> None:
        """A thread's bulk async-groups: commit closes the open one; wait_group N leaves the
        N newest reading (the shared bytes of the older ones are free again)."""
        for thread in at.threads.tolist():
            groups = self.reading.setdefault(thread, [[]])
            if at.op.name == COMMIT:
                groups.append([])
                continue
            pending = ir.IntegerAttr(at.op.attributes["group"]).value
            committed, current = groups[:-1], groups[-1]
            kept = committed[len(committed) - pending :] if pending else []
            self.reading[thread] = [*kept, current]

    def expected(self) -> set[int]:
        """Every element of C the block's tiles cover."""
        found: set[int] = set()
        for unit in self.tiles:
            source = self.b.source
            x = np.arange(source.tiles[source.loaded_into(source.operands[0])][0])
            y = np.arange(source.tiles[source.loaded_into(source.operands[1])][0])
            xx, yy = (g.reshape(-1) for g in np.meshgrid(x, y, indexing="ij"))
            index = self.c_index(unit, xx, yy)
            inside = ((index >= 0) & (index < self.shape)).all(axis=1)
            found.update(self.code(index[inside]).tolist())
        return found


def wanted(op: ir.Operation) -> bool:
    return op.name in ("llvm.store", "llvm.load", TMA_STORE, COMMIT, WAIT_GROUP)


def element_bytes(address: np.ndarray, lanes: int, eb: int) -> np.ndarray:
    """[threads, lanes, eb]: the bytes of each lane's element."""
    return address[:, None, None] + (np.arange(lanes) * eb)[None, :, None] + np.arange(eb)


def unravel(linear: np.ndarray, shape: tuple, strides: tuple) -> np.ndarray:
    """[n, rank]: the index of each element offset of a tensor (strides in elements)."""
    index = np.zeros((len(linear), len(shape)), dtype=np.int64)
    rest = linear.copy()
    for mode in sorted(range(len(shape)), key=lambda m: -strides[m]):
        index[:, mode], rest = rest // strides[mode], rest % strides[mode]
    return index


def case_id(case: tuple) -> str:
    key, made, rows, cols = case
    return f"{key}-{'tma' if made else 'copy'}" + (f"-ragged{rows},{cols}" if rows or cols else "")


def stored(b: Build, cluster: list[Launch], made: bool = True) -> tuple[Counter, set[int]]:
    """Every C element the blocks of one cluster store (counted), and those their units'
    tiles cover, each block's stores followed by an `Epilogue`."""
    sizes = cluster[0].sizes
    blocks = [events(b, launch) for launch in cluster]
    rows = {
        (op_id(o.mma.op), o.mma.group): (o.a[0], o.b[0], Wgmma.of(o.mma.op).n)
        for o in operands(b, blocks)
    }
    (c_map,) = [d for d in b.maps if d.tensor == "C"] or [None]
    shape, strides, dtype = b.view("C", sizes)
    c = TensorMap.of(c_map, shape, strides, dtype, sizes) if made and c_map else None
    unmade = frozenset({c_map.name}) if c_map is not None and not made else frozenset()
    written: Counter = Counter()
    covered: set[int] = set()
    tensors = {
        b.pointer(p.name): b.view(p.name, sizes)[1] for p in b.info.params if p.kind == "tensor"
    }
    for launch, evs in zip(cluster, blocks, strict=True):
        tiles = unit_tiles(b, tensor_maps(b, sizes), evs)
        epilogue = Epilogue(b, rows, tiles, c, shape, strides, ring_spans(b, blocks),
                            b.pointer("C"), tensors=tensors)  # fmt: skip
        Run(b, replace(launch, unmade=unmade), wanted, epilogue.visit)()
        assert not epilogue.smem.any(), "chunk bytes written and never stored"
        written.update(epilogue.written)
        covered |= epilogue.expected()
    return written, covered


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_accumulator_element_reaches_its_element_of_c(case: tuple) -> None:
    key, made, short_m, short_n = case
    b = named(key)
    sizes = dict(launches(b)[0].sizes)
    sizes.update(M=sizes["M"] - short_m, N=sizes["N"] - short_n)
    written, covered = stored(b, [replace(x, sizes=sizes) for x in launches(b)], made)
    assert set(written.values()) == {1}, "an element of C stored twice"
    assert set(written) == covered
    assert len(written) >= 2 * (b.source.block[0] - 64) * (b.source.block[1] - 64)


@pytest.mark.parametrize(
    ("key", "m", "n", "kt", "grid"),
    [("BK=64", 128, 2 * 256, 37, 4), ("PP", 128, 2 * 128, 40, 4), ("CM=2", 256, 256, 37, 4)],
)
def test_split_units_store_each_tile_once(key: str, m: int, n: int, kt: int, grid: int) -> None:
    """A split tail (two tiles, halves along K over four blocks): only the tiles' owners
    store, each element of C once over the grid."""
    b = named(key)
    sizes = leading(b, {"M": m, "N": n, "K": kt * int(b.params["BK"])})
    cluster = int(b.params.get("CM", 1))
    written: Counter = Counter()
    covered: set[int] = set()
    for first in range(0, grid, cluster):
        mine = [Launch(sizes, grid, c, cluster) for c in range(first, first + cluster)]
        got, tiles = stored(b, mine)
        written.update(got)
        covered |= tiles
    assert set(written.values()) == {1} and set(written) == covered
    assert len(covered) == m * n
