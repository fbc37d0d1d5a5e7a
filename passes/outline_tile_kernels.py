"""Passes: `outline-tile-kernels`, lowered tile kernels become gpu.funcs of gpu.module @kernels."""

from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import arith, gpu, llvm

from tilec import smem
from tilec.binding import walk
from tilec.lowering.tile_refusals import RUNGS
from tilec.lowering.tile_views import GEP_INBOUNDS
from tilec.passes.base import Pass, register
from tilec.targets import STATIC_SMEM

GLOBAL_PTR = "!llvm.ptr<1>"
SHARED_PTR = "!llvm.ptr<3>"
DYNAMIC_SYMBOL = "__tile_dynamic_smem"
_ARRAY = re.compile(r"^!llvm\.array<(\d+) x (\w+)>$")


# Ops of the tilec dialects an earlier pass of the `lowered` stage must have lowered, and which.
LOWERED_BY = {"tile.": "convert-tile-to-gpu", "layout.": "convert-layout-to-arith"}


def left_for(op: ir.Operation) -> str | None:
    """The pass that should have lowered `op`, None for ops that may stay."""
    if op.name in RUNGS:
        return RUNGS[op.name]
    return next((p for prefix, p in LOWERED_BY.items() if op.name.startswith(prefix)), None)


def is_shared_global(op: ir.Operation) -> bool:
    if op.name != "llvm.mlir.global" or "addr_space" not in op.attributes:
        return False
    return ir.IntegerAttr(op.attributes["addr_space"]).value == 3


def is_kernel_global(op: ir.Operation) -> bool:
    """A global the kernels own: shared memory, or device memory (a split tail's workspace)."""
    if op.name != "llvm.mlir.global" or "addr_space" not in op.attributes:
        return False
    return ir.IntegerAttr(op.attributes["addr_space"]).value in (1, 3)


INDEX_32 = "#dlti.dl_spec<index = 32 : i32>"
INDEX_BITWIDTHS = (32, 64)


def ref_name(op: ir.Operation) -> str:
    """The global an `llvm.mlir.addressof` names."""
    return ir.FlatSymbolRefAttr(op.attributes["global_name"]).value


def shared_refs(func: ir.Operation, shared: dict[str, ir.Operation]) -> list[ir.Operation]:
    """The `llvm.mlir.addressof` ops of `func` that take a shared global's address."""
    found: list[ir.Operation] = []
    walk(
        func,
        lambda op: (
            found.append(op)
            if op.name == "llvm.mlir.addressof" and ref_name(op) in shared
            else None
        ),
    )
    return found


def dynamic_bases(func: ir.Operation, offsets: dict[str, int]) -> dict[str, ir.Value]:
    """At `func`'s entry, each buffer's base inside the extern dynamic array: its offset
    bytes past the array's address."""
    entry = func.regions[0].blocks[0]
    ptr = ir.Type.parse(SHARED_PTR)
    i8 = ir.IntegerType.get_signless(8)
    with ir.InsertionPoint.at_block_begin(entry), func.location:
        base = llvm.AddressOfOp(ptr, DYNAMIC_SYMBOL).result
        return {
            n: base
            if offset == 0
            else llvm.GEPOp(
                ptr,
                base,
                [],
                ir.DenseI32ArrayAttr.get([offset]),
                i8,
                ir.IntegerAttr.get(ir.IntegerType.get_signless(32), GEP_INBOUNDS),
            ).result
            for n, offset in offsets.items()
        }


@register
class OutlineTileKernels(Pass):
    """Move each lowered tile kernel into `gpu.module @kernels` as a `gpu.func` with the ABI.

    Arguments keep their order: `!llvm.ptr` → `!llvm.ptr<1>`, `index` → `i64`, scalars as
    they are; `tile.*` attributes are copied, `tile.dynamic_smem` and `gpu.known_block_size`
    added; workgroup globals move along:

        func.func @vadd(%x: !llvm.ptr, %n: index) attributes {tile.kernel, tile.threads = ...}
      →
        module attributes {gpu.container_module} {
          gpu.module @kernels {
            gpu.func @vadd(%x: !llvm.ptr<1>, %n: i64) kernel attributes {
                gpu.known_block_size = array<i32: 256, 1, 1>, tile.dynamic_smem = 0 : i64, ...}

    `index-bitwidth=32` (the default) gives the `gpu.module` a 32-bit `index`
    (`dlti.dl_spec<index = 32 : i32>`); `index-bitwidth=64` keeps MLIR's 64-bit `index`: the
    wide variant a bundle launches when a tensor spans 2^31 elements or more.
    """

    name = "outline-tile-kernels"
    index_bitwidth: int = 32

    def run(self, module: ir.Operation) -> None:
        if self.index_bitwidth not in INDEX_BITWIDTHS:
            self.error(module, f"index-bitwidth must be 32 or 64, got {self.index_bitwidth}")
            self.fail()
        body = module.regions[0].blocks[0]
        kernels = [
            op.operation
            for op in body.operations
            if op.operation.name == "func.func" and "tile.kernel" in op.operation.attributes
        ]
        if not kernels:
            return
        failed = False
        for func in kernels:
            nested: list[ir.Operation] = []
            walk(func, lambda op, found=nested: found.append(op) if left_for(op) else None)
            if nested:
                left = nested[0]
                self.error(left, f"'{left.name}' is left; run {left_for(left)} first")
                failed = True
            if len(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).results):
                self.error(func, "a kernel returns nothing")
                failed = True
        if failed:
            self.fail()
        module.attributes["gpu.container_module"] = ir.UnitAttr.get()
        with ir.InsertionPoint(body), module.location:
            container = gpu.GPUModuleOp("kernels")
            # 32-bit index arithmetic in kernels (sizes, offsets in elements stay below 2^31;
            # the runtime launches the 64-bit variant past that): half the registers and
            # instructions of 64-bit integer math.
            if self.index_bitwidth == 32:
                container.attributes["dlti.dl_spec"] = ir.Attribute.parse(INDEX_32)
            container.regions[0].blocks.append()
        inner = container.regions[0].blocks[0]
        for op in [o.operation for o in body.operations if is_kernel_global(o.operation)]:
            inner.append(op)
        for func in kernels:
            self.outline(func, inner)
        self.to_dynamic(inner)

    @staticmethod
    def global_bytes(op: ir.Operation) -> int:
        m = _ARRAY.match(str(ir.TypeAttr(op.attributes["global_type"]).value))
        if m is None:
            return 0
        elem = ir.Type.parse(m.group(2))
        try:
            bits = ir.IntegerType(elem).width
        except ValueError:
            bits = ir.FloatType(elem).width
        return int(m.group(1)) * max(1, bits // 8)

    @classmethod
    def to_dynamic(cls, inner: ir.Block) -> None:
        """Kernels whose shared globals pass 48 KiB address them in one extern dynamic array.

        Each buffer gets a static offset (128-byte aligned) into `__tile_dynamic_smem`, which
        lowers to `.extern .shared .align 16 .b8 __tile_dynamic_smem[]`; the kernel's
        `tile.dynamic_smem` says how many bytes to launch with:

            %0 = llvm.mlir.addressof @__smem_gemm_sB : !llvm.ptr<3>
          →
            %d = llvm.mlir.addressof @__tile_dynamic_smem : !llvm.ptr<3>
            %0 = llvm.getelementptr inbounds %d[65536] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
        """
        shared = {
            ir.StringAttr(o.operation.attributes["sym_name"]).value: o.operation
            for o in inner.operations
            if is_shared_global(o.operation)
        }
        funcs = [o.operation for o in inner.operations if o.operation.name == "gpu.func"]
        moved: set[str] = set()
        extern_made = False
        for func in funcs:
            refs = shared_refs(func, shared)
            names = list(dict.fromkeys(ref_name(r) for r in refs))
            total = sum(cls.global_bytes(shared[n]) for n in names)
            # Beyond every target's static limit a kernel takes its buffers as dynamic shared
            # memory (ptxas rejects larger static `.shared` arrays).
            if total <= STATIC_SMEM:
                continue
            offsets, end = smem.dynamic_offsets([(n, cls.global_bytes(shared[n])) for n in names])
            if not extern_made:
                with ir.InsertionPoint.at_block_begin(inner), func.location:
                    llvm.GlobalOp(
                        ir.Type.parse("!llvm.array<0 x i8>"),
                        DYNAMIC_SYMBOL,
                        ir.Attribute.parse("#llvm.linkage<external>"),
                        alignment=16,
                        addr_space=3,
                    )
                extern_made = True
            bases = dynamic_bases(func, offsets)
            for r in refs:
                r.results[0].replace_all_uses_with(bases[ref_name(r)])
                r.erase()
            func.attributes["tile.dynamic_smem"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), end
            )
            moved.update(names)
        # A global no kernel addresses any more would still be reserved as static smem.
        if moved:
            still = {ref_name(r) for func in funcs for r in shared_refs(func, shared)}
            for n in moved - still:
                shared[n].erase()

    @staticmethod
    def outline(func: ir.Operation, inner: ir.Block) -> None:
        old = func.regions[0].blocks[0]
        index = ir.IndexType.get()
        new_types = []
        for arg in old.arguments:
            t = arg.type
            if str(t) == "!llvm.ptr":
                t = ir.Type.parse(GLOBAL_PTR)
            elif t == index:
                t = ir.IntegerType.get_signless(64)
            new_types.append(t)
        name = ir.StringAttr(func.attributes["sym_name"]).value
        threads = list(ir.DenseI64ArrayAttr(func.attributes["tile.threads"]))
        with ir.InsertionPoint(inner), func.location:
            block = [*threads, 1, 1][:3]
            kernel = gpu.GPUFuncOp(
                ir.TypeAttr.get(ir.FunctionType.get(new_types, [])),
                sym_name=name,
                kernel=True,
                known_block_size=block,
            )
            for i in range(len(func.attributes)):
                attr = func.attributes[i]
                if attr.name.startswith("tile.") and attr.name != "tile.kernel":
                    kernel.attributes[attr.name] = attr.attr
            kernel.attributes["tile.dynamic_smem"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), 0
            )
            entry = kernel.body.blocks.append(*new_types)
        with ir.InsertionPoint.at_block_begin(entry), func.location:
            for old_arg, new_arg in zip(old.arguments, entry.arguments, strict=True):
                if old_arg.type == new_arg.type:
                    old_arg.replace_all_uses_with(new_arg)
                elif old_arg.type == index:
                    old_arg.replace_all_uses_with(arith.IndexCastOp(index, new_arg).result)
                else:
                    OutlineTileKernels.rebind_pointer(old_arg, new_arg)
        for op in [o.operation for o in old.operations]:
            if op.name == "func.return":
                with ir.InsertionPoint(entry), op.location:
                    gpu.ReturnOp([])
                op.erase()
            else:
                entry.append(op)
        func.erase()

    @staticmethod
    def rebind_pointer(old_arg: ir.Value, new_arg: ir.Value) -> None:
        """Casts to the global space become the new argument; other uses see a generic one."""
        for use in list(old_arg.uses):
            user = use.owner
            if user.name == "llvm.addrspacecast" and user.results[0].type == new_arg.type:
                user.results[0].replace_all_uses_with(new_arg)
                user.erase()
        if any(True for _ in old_arg.uses):
            generic = llvm.AddrSpaceCastOp(old_arg.type, new_arg).result
            old_arg.replace_all_uses_with(generic)
