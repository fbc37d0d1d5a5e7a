"""Test helper: run a warp-specialised SM90 kernel's `gpu` stage on the CPU, numbers and all.

Each warp group of a block is a coroutine over 128 lanes (numpy vectors); the groups interleave
where the hardware would make them wait: an mbarrier phase (`try_wait.parity`), a block or
named barrier. The asynchronous units act as the PTX ISA says, placed by sm90_model (the SM90
tests' one model of the hardware: swizzle, TMA box placement, matrix descriptors, the D
fragment), never by tilec's lowering:

- TMA (`cp.async.bulk.tensor`): the box at the coordinates given, from the tensor as the
  runtime's map encodes it, zeros out of bounds, into the swizzled shared bytes
  sm90_model.TensorMap.writes names, its bytes completed on the barrier; a store the other
  way, inside the tensor only, its shared bytes read when `cp.async.bulk.wait_group` retires
  its bulk group (so a staging buffer rewritten before that wait stores the new bytes);
- mbarriers: arrivals and transaction bytes per phase, the phase's parity; named barriers;
- wgmma: a group runs when `wait_group` retires it (so a stage released too early is read
  after the producer refilled it: a wrong result), reading shared memory through the matrix
  descriptors (sm90_model.Descriptor) and A from registers for the RS form (the m16n8k16 A
  fragment in each warp), honouring scale-d, writing the D fragment (sm90_model.d_fragment);
  reading an accumulator before its group retires raises `EarlyRead`.

Supported: what tilec emits for these kernels (arith, math, llvm, gpu, nvvm and scf ops it
uses); anything else raises NotImplementedError naming the op.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sm80_emu_ops  # noqa: F401  (registers ldmatrix and mma.sync in OPS)
from mlir import ir
from sm90_emu_model import (
    SHARED_BASE,
    WARPGROUP,
    Deadlock,
    Groups,
    Mapped,
    MBarrier,
    Memory,
    elem_size,
    resolve,
    uniform,
)
from sm90_emu_ops import OPS
from sm90_model import TensorMap

# The block ---------------------------------------------------------------------------------

Env = dict


class Block:
    """One block of the kernel: its warp groups run as coroutines over a shared machine."""

    def __init__(
        self, kernel: ir.Operation, args: list[object], maps: dict[int, Mapped],
        memory: Memory, block: tuple[int, int, int], grid: tuple[int, int, int],
    ) -> None:  # fmt: skip
        self.kernel, self.memory, self.maps = kernel, memory, maps
        self.block_id, self.grid = block, grid
        self.threads = int(list(ir.DenseI32ArrayAttr(kernel.attributes["known_block_size"]))[0])
        self.args = args
        self.barriers: dict[int, MBarrier] = {}
        self.named: dict[int, int] = {}  # named barrier id -> threads arrived
        self.generation: dict[int, int] = {}
        self.globals = shared_globals(kernel)
        size = max((at + n for at, n in self.globals.values()), default=0)
        memory.shared = np.full(size + 4096, 0xFF, dtype=np.uint8)  # poisoned
        self.steps = 0

    def run(self) -> None:
        groups = [Group(self, g) for g in range(-(-self.threads // WARPGROUP))]
        runs = [g.run() for g in groups]
        alive = list(range(len(runs)))
        while alive:
            before = self.steps
            for g in list(alive):
                try:
                    next(runs[g])
                except StopIteration:
                    alive.remove(g)
            if alive and self.steps == before:
                raise Deadlock(f"warp groups {alive} all wait")


def shared_globals(kernel: ir.Operation) -> dict[str, tuple[int, int]]:
    """Each shared `llvm.mlir.global` of the kernel's module: (address, bytes); the dynamic
    window last, sized by the kernel's `tile.dynamic_smem`."""
    module = kernel.parent
    out, at = {}, SHARED_BASE
    dynamic = None
    for o in module.regions[0].blocks[0].operations:
        op = o.operation
        if op.name != "llvm.mlir.global" or "addr_space" not in op.attributes:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        m = re.search(r"array<(\d+) x (\w+)>", str(op.attributes["global_type"]))
        n = int(m.group(1)) * elem_size(m.group(2)) if m else 0
        if n == 0:
            dynamic = name
            continue
        out[name] = (at, n)
        at = (at + n + 15) // 16 * 16
    if dynamic is not None:
        n = ir.IntegerAttr(kernel.attributes["tile.dynamic_smem"]).value
        out[dynamic] = (at, n)
    return out


class Group:
    """One warp group's 128 lanes running the kernel's body."""

    def __init__(self, block: Block, index: int) -> None:
        self.block, self.index = block, index
        self.tid = index * WARPGROUP + np.arange(WARPGROUP, dtype=np.int64)
        self.env: Env = {}
        self.mmas = Groups()  # wgmma's, by commit group
        self.stores = Groups()  # TMA stores, by bulk group
        self.copies = Groups()  # cp.async copies, by group
        self.live = self.tid < block.threads  # lanes past a block of under 128 threads: none

    def run(self) -> Generator[None, None, None]:
        body = self.block.kernel.regions[0].blocks[0]
        for arg, value in zip(body.arguments, self.block.args, strict=True):
            self.env[arg] = value
        yield from self.run_block(body, self.live)

    # control flow

    def run_block(self, block: ir.Block, mask: np.ndarray) -> Generator[None, None, list]:
        for o in block.operations:
            op = o.operation
            self.block.steps += 1
            if op.name in ("scf.yield", "gpu.return", "func.return"):
                return [self.get(v) for v in op.operands]
            if op.name == "scf.if":
                yield from self.run_if(op, mask)
            elif op.name == "scf.for":
                yield from self.run_for(op, mask)
            elif op.name in WAITS:
                yield from WAITS[op.name](self, op, mask)
            else:
                self.step(op, mask)
        return []

    def run_if(self, op: ir.Operation, mask: np.ndarray) -> Generator[None, None, None]:
        cond = np.broadcast_to(np.asarray(self.get(op.operands[0]), dtype=bool), mask.shape)
        taken, other = mask & cond, mask & ~cond
        outs = []
        for m, region in ((taken, op.regions[0]), (other, op.regions[1])):
            if m.any() and len(region.blocks):
                outs.append((m, (yield from self.run_block(region.blocks[0], m))))
        for k, r in enumerate(op.results):
            values = [(m, vals[k]) for m, vals in outs]
            self.env[r] = merge(values) if values else None

    def run_for(self, op: ir.Operation, mask: np.ndarray) -> Generator[None, None, None]:
        lb, ub, step = (uniform(self.get(v), mask) for v in list(op.operands)[:3])
        carried = [self.get(v) for v in list(op.operands)[3:]]
        body = op.regions[0].blocks[0]
        for i in range(lb, ub, step):
            self.env[body.arguments[0]] = np.int64(i)
            for arg, v in zip(list(body.arguments)[1:], carried, strict=True):
                self.env[arg] = v
            carried = yield from self.run_block(body, mask)
        for r, v in zip(op.results, carried, strict=True):
            self.env[r] = v

    def get(self, v: ir.Value) -> object:
        return self.env[v]

    def value(self, v: ir.Value) -> object:
        """`v` resolved (an accumulator register must have retired)."""
        return resolve(self.env[v])

    def step(self, op: ir.Operation, mask: np.ndarray) -> None:
        fn = OPS.get(op.name)
        if fn is None:
            raise NotImplementedError(f"the emulator does not run '{op.name}'")
        out = fn(self, op, mask)
        if out is None:
            return
        results = list(op.results)
        out = out if isinstance(out, tuple) else (out,)
        for r, v in zip(results, out, strict=True):
            self.env[r] = v

    # asynchronous units

    def barrier(self, address: object, mask: np.ndarray) -> MBarrier:
        return self.block.barriers[uniform(address, mask)]


def merge(values: list[tuple[np.ndarray, object]]) -> object:
    """Per lane, the value of the branch that lane took."""
    if len(values) == 1 or values[0][1] is None:
        return values[-1][1]
    (m0, a), (_, b) = values
    if isinstance(a, list):
        return [merge([(m0, x), (None, y)]) for x, y in zip(a, b, strict=True)]
    a, b = resolve(a), resolve(b)
    a, b = np.asarray(a), np.asarray(b)
    cond = m0 if a.ndim <= 1 else m0[:, None]
    return np.where(cond, a, b)


# Waits (may block) ------------------------------------------------------------------------


def try_wait(g: Group, op: ir.Operation, mask: np.ndarray) -> Generator[None, None, None]:
    bar = g.barrier(g.value(op.operands[0]), mask)
    parity = uniform(g.value(op.operands[1]), mask)
    while bar.parity == parity:  # the phase of that parity has not completed
        yield


def block_barrier(g: Group, op: ir.Operation, mask: np.ndarray) -> Generator[None, None, None]:
    """bar.sync / bar.arrive: `gpu.barrier` (the block), `nvvm.barrier` or the intrinsics
    `barrier.cta.{sync,arrive}.aligned.count` (id, thread count). A barrier completes when
    `count` threads arrived; `sync` then waits for that, `arrive` goes on."""
    ident, count, sync = 0, g.block.threads, True
    if op.name == "llvm.call_intrinsic":
        intrinsic = ir.StringAttr(op.attributes["intrin"]).value
        if not intrinsic.startswith("llvm.nvvm.barrier.cta."):
            raise NotImplementedError(f"the emulator does not run {intrinsic}")
        sync = ".sync." in intrinsic
    if len(op.operands):
        ident = uniform(g.value(op.operands[0]), mask)
        count = uniform(g.value(op.operands[1]), mask) if len(op.operands) > 1 else count
    assert (mask == g.live).all(), "a barrier in divergent code"
    b = g.block
    gen = b.generation.get(ident, 0)
    b.named[ident] = b.named.get(ident, 0) + int(np.count_nonzero(g.live))
    assert b.named[ident] <= count, f"barrier {ident}: more arrivals than its count"
    if b.named[ident] == count:
        b.named[ident] = 0
        b.generation[ident] = gen + 1
    while sync and b.generation.get(ident, 0) == gen:
        yield


WAITS: dict[str, Callable] = {
    "nvvm.mbarrier.try_wait.parity": try_wait,
    "gpu.barrier": block_barrier,
    "nvvm.barrier": block_barrier,
    "nvvm.barrier0": block_barrier,
    "llvm.call_intrinsic": block_barrier,
}


# Launching ---------------------------------------------------------------------------------


@dataclass
class Compiled:
    """A kernel's `gpu` stage and the manifest the runtime binds its arguments with."""

    module: ir.Module
    kernel: ir.Operation
    manifest: object


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@functools.cache
def example(name: str, special: bool = False, **params: str) -> Compiled:
    """examples/<name>.tile compiled by `compile_kernel` (once a name and parameters)."""
    return compile_kernel(str(EXAMPLES / f"{name}.tile"), dict(params), special)


def compile_kernel(path: str, params: dict[str, str], special: bool = False) -> Compiled:
    """`path` compiled to the `gpu` stage (one kernel), with its manifest; `special`: its
    specialize(...) variant, as the launches that clause names run it."""
    from tilec.binding import walk
    from tilec.build import kernels_of
    from tilec.driver import CompileOptions, compile_file
    from tilec.gpu_facts import tma_descriptors
    from tilec.runtime.bundle import Manifest
    from tilec.runtime.params import TmaParam

    infos: list = []

    def read(artifact: object) -> None:
        if artifact.stage == "tile":
            infos.extend(kernels_of(artifact.value))

    pipelines = {}
    if special:
        from tilec.stages import BY_KEY, SPECIALIZE_PREFIX

        pipelines = {"lowered": f"{SPECIALIZE_PREFIX}{BY_KEY['lowered'].pipeline}"}
    options = CompileOptions(emit="gpu", params=params, contracts=False, pipelines=pipelines)
    module = compile_file(path, options, on_stage=read).value
    kernels: list[ir.Operation] = []
    walk(module.operation, lambda o: kernels.append(o) if o.name == "gpu.func" else None)
    (kernel,), (info,) = kernels, infos
    maps = tma_descriptors(module).get(info.name, ())
    smem = ir.IntegerAttr(kernel.attributes["tile.dynamic_smem"]).value
    manifest = Manifest(
        entry=info.name, target=info.target,
        params=info.params + tuple(TmaParam(d.name, d.name) for d in maps), tma=maps,
        grid=info.grid, block=info.threads, cluster=info.cluster, dynamic_smem=smem,
        constants=info.constants, requires=info.requires,
    )  # fmt: skip
    return Compiled(module, kernel, manifest)


@dataclass
class Tensor:
    """A kernel tensor argument: a numpy view (of a contiguous array: the memory the kernel
    addresses) and its manifest dtype (`bf16`: a uint16 array of the bit patterns)."""

    array: np.ndarray
    dtype: str | None = None

    def storage(self) -> tuple[np.ndarray, int]:
        """The underlying storage's bytes (aliasing it) and the view's byte offset there."""
        base = self.array
        while isinstance(base.base, np.ndarray):
            base = base.base
        assert base.flags.c_contiguous, "pass views of contiguous arrays"
        at = self.array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        return base.reshape(-1).view(np.uint8), at

    def device(self, ptr: int) -> object:
        """As the runtime sees a CUDA tensor at `ptr`: its shape, element strides, dtype."""
        from tilec.runtime.tensors import DeviceArray

        a = self.array
        dtype = self.dtype or {"float16": "f16", "float32": "f32", "int32": "i32"}[a.dtype.name]
        strides = tuple(s // a.itemsize for s in a.strides)
        return DeviceArray(ptr, a.shape, strides, dtype)


def run(c: Compiled, args: tuple, blocks: list[tuple[int, int, int]] | None = None,
        num_sms: int = 4) -> tuple[int, int, int]:  # fmt: skip
    """Launch `c` on `args` (numpy arrays or `Tensor`s, and scalars) as the runtime binds
    them (its manifest), running `blocks` (default: every block of the grid) one after
    another; tensors are written in place. Returns the grid."""
    from tilec.runtime.binding import bind
    from tilec.runtime.params import ScalarParam, SizeParam, TensorParam, TmaParam

    m = c.manifest
    tensors = [p.name for p in m.params if isinstance(p, TensorParam)]
    memory = Memory({})
    pointers, bound = {}, []
    for a in args:
        if isinstance(a, np.ndarray | Tensor):
            t = a if isinstance(a, Tensor) else Tensor(a)
            k = len(memory.buffers)
            memory.buffers[k], at = t.storage()
            pointers[k] = ((k + 1) << 40) + at
            bound.append(t.device(pointers[k]))
        else:
            bound.append(a)
    b = bind(m, tuple(bound), device=lambda ordinal: {"num_sms": num_sms})
    values: list[object] = []
    maps: dict[int, Mapped] = {}
    for p, slot in zip(m.params, b.slots, strict=True):
        if isinstance(p, TensorParam):
            values.append(np.int64(pointers[tensors.index(p.name)]))
        elif isinstance(p, SizeParam | ScalarParam):
            v = slot.value
            values.append(np.float32(v) if isinstance(v, float) else np.int64(v))
        elif isinstance(p, TmaParam):
            address = (64 + len(maps)) << 40
            d = next(d for d in m.tma if d.name == p.descriptor)
            view = b.views[d.tensor]
            tmap = TensorMap.of(d, view.shape, view.strides, view.dtype, b.symbols)
            k = tensors.index(d.tensor)
            at = pointers[k] & ((1 << 40) - 1)  # the view's offset in its buffer
            maps[address] = Mapped(tmap, k, view.shape, view.strides, at)
            values.append(np.int64(address))
    grid = tuple(int(x) for x in b.grid)
    every = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    for block in every if blocks is None else blocks:
        Block(c.kernel, values, maps, memory, block, grid).run()
    return grid
