"""What the `gpu` stage of a compile says about each kernel beyond its code, for the bundle's
manifest (tilec/build.py): the tensor maps it takes (`tile.tma`) and whether it keeps state in
a mutable global (a split tail's workspace), which overlapping launches would share."""

from __future__ import annotations

from mlir import ir

from tilec.binding import walk
from tilec.runtime.bundle import TmaDescriptor


def tma_descriptors(gpu_module: ir.Module) -> dict[str, tuple[TmaDescriptor, ...]]:
    """Per kernel of the `gpu` stage, the tensor maps it takes as trailing arguments (its
    `tile.tma` attribute, in argument order; tile-ring writes it)."""
    found: dict[str, tuple[TmaDescriptor, ...]] = {}

    def visit(op: ir.Operation) -> None:
        if op.name != "gpu.func" or "tile.tma" not in op.attributes:
            return
        maps = []
        for entry in ir.ArrayAttr(op.attributes["tile.tma"]):
            d = ir.DictAttr(entry)
            maps.append(
                TmaDescriptor(
                    ir.StringAttr(d["name"]).value,
                    ir.StringAttr(d["tensor"]).value,
                    tuple(ir.DenseI64ArrayAttr(d["box"])),
                    swizzle=ir.StringAttr(d["swizzle"]).value,
                    # 128-byte L2 promotion, not 256: with rows only 16-byte aligned (K = 3000
                    # in bf16) 256 ran the SM90 GEMM 10-14% slower, and the same elsewhere
                    # (docs/performance.md, "Shapes beside cuBLAS").
                    l2_promotion="128B",
                    optional="optional" in d,
                    order=tuple(ir.DenseI64ArrayAttr(d["order"])) if "order" in d else None,
                )
            )
        found[ir.StringAttr(op.attributes["sym_name"]).value] = tuple(maps)

    walk(gpu_module.operation, visit)
    return found


def stateful_kernels(gpu_module: ir.Module) -> set[str]:
    """The kernels of the `gpu` stage that take the address of a mutable global in global
    memory (a split tail's workspace): state that overlapping launches would share."""
    mutable: set[str] = set()
    uses: list[tuple[str, str]] = []  # (kernel, global)
    within = [""]  # the gpu.func being walked (pre-order: its body follows it)

    def visit(op: ir.Operation) -> None:
        if op.name == "gpu.func":
            within[0] = ir.StringAttr(op.attributes["sym_name"]).value
        elif op.name == "llvm.mlir.global":
            within[0] = ""  # its initializer's ops are no kernel's
            attrs = op.attributes
            space = ir.IntegerAttr(attrs["addr_space"]).value if "addr_space" in attrs else 0
            if space == 1 and "constant" not in attrs:
                mutable.add(ir.StringAttr(attrs["sym_name"]).value)
        elif op.name == "llvm.mlir.addressof" and within[0]:
            uses.append((within[0], ir.FlatSymbolRefAttr(op.attributes["global_name"]).value))

    walk(gpu_module.operation, visit)
    return {kernel for kernel, name in uses if name in mutable}
