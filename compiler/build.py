"""Bundles: compile a `.tile` file to PTX and describe each kernel's launch in a manifest.

The manifest comes from the `tile` stage (where tensors still carry their element types and
layouts, and `tile.bindings` says where each runtime size comes from) and from the `gpu`
stage (the dynamic shared memory the lowering chose). The runtime needs nothing else.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mlir import ir

from tilec import __version__
from tilec.binding import walk
from tilec.contract import dynamic_smem
from tilec.dialects.tile.types import TensorType, view_root
from tilec.driver import Artifact, CompileOptions, compile_file, fail
from tilec.frontend.clauses import Variant
from tilec.gpu_facts import stateful_kernels, tma_descriptors
from tilec.lowering import ASSUME
from tilec.passes.tile_specialize import SPECIALIZE
from tilec.runtime.bundle import (
    Manifest,
    Param,
    Requirement,
    ScalarParam,
    SizeParam,
    TensorParam,
    TmaDescriptor,
    TmaParam,
    VariantRef,
    write_bundle,
)
from tilec.stages import BY_KEY, SPECIALIZE_PREFIX, WIDE_GPU_PIPELINE

_BINDING = re.compile(r"^(\w+)\.(shape|stride)\[(\d+)\]$")
SCALAR_DTYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16", "i32": "i32", "i64": "i64"}


@dataclass
class KernelInfo:
    """What the manifest needs of one kernel, read off its `tile`-stage function."""

    name: str
    target: str
    threads: tuple[int, int, int]
    grid: tuple[str, ...]
    params: tuple[Param, ...]
    constants: dict[str, Any]
    requires: tuple[Requirement, ...] = ()
    special: tuple[Requirement, ...] = ()  # specialize(...): when the special variant runs
    cluster: int = 1  # cluster(S): blocks per cluster along x
    # variant(K % 16 == 8, CM = 2) clauses in order: (conditions, the parameters each sets)
    variants: tuple[Variant, ...] = ()


def _attr_list(attr: ir.Attribute) -> list[str]:
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(attr)]


def _bindings(func: ir.Operation) -> dict[tuple[str, str, int], str]:
    """(tensor, 'shape'|'stride', dim) -> size name, from `tile.bindings`."""
    found: dict[tuple[str, str, int], str] = {}
    bindings = ir.DictAttr(func.attributes["tile.bindings"])
    for i in range(len(bindings)):
        named = bindings[i]
        for where in _attr_list(named.attr):
            m = _BINDING.match(where)
            if m:
                found[(m.group(1), m.group(2), int(m.group(3)))] = named.name
    return found


def _broadcast_modes(func: ir.Operation) -> set[tuple[str, int]]:
    """(tensor, mode) of every mode of stride 0 (`W: T[(R, N):(0, 1)]`): each coordinate along
    it reads the same elements, so tiling it at coordinate 0 touches all of them."""
    found: set[tuple[str, int]] = set()
    for name, typ in _tensor_types(func).items():
        strides = _modes(typ.layout_value().stride)
        found.update((name, mode) for mode, d in enumerate(strides) if d == 0)
    return found


def _tensor_types(func: ir.Operation) -> dict[str, TensorType]:
    """tensor name -> its type, from its `tile.make_tensor`."""
    found: dict[str, TensorType] = {}
    for op in func.regions[0].blocks[0].operations:
        if op.operation.name != "tile.make_tensor":
            continue
        typ = TensorType.of(op.results[0].type)
        if typ is not None:
            found[ir.StringAttr(op.attributes["name"]).value] = typ
    return found


def _strides(
    arg: str, layout: Any, bindings: dict[tuple[str, str, int], str]
) -> tuple[int | str, ...] | None:
    """A tensor's strides for the manifest: static ones from its layout, runtime ones by the
    size they bind; None (contiguous row-major) for the default layout of `T[M, K]`, whose
    strides are products of sizes, and for static strides that are row-major anyway."""
    strides: list[int | str] = []
    for d, stride in enumerate(_modes(layout.stride)):
        name = bindings.get((arg, "stride", d))
        if name is None and not isinstance(stride, int):
            return None
        strides.append(stride if name is None else name)
    row_major: list[int | None] = []
    step: int | None = 1
    for extent in reversed(_modes(layout.shape)):
        row_major.insert(0, step)
        step = step * extent if isinstance(step, int) and isinstance(extent, int) else None
    return None if strides == row_major else tuple(strides)


def _modes(t: Any) -> tuple[Any, ...]:
    return t if isinstance(t, tuple) else (t,)


def _coord_entries(coord: str) -> list[str]:
    """`(?,0,_)` -> ['?', '0', '_']: a local_tile's coordinate, one entry per mode."""
    return [e.strip() for e in coord.strip().strip("()").split(",")]


def requirements(func: ir.Operation) -> tuple[Requirement, ...]:
    """What the kernel needs of its runtime sizes, derived from its tiles: a tensor tiled at a
    constant coordinate c along a mode of size N by tiles of T is only ever touched in
    [c*T, (c+1)*T) along it, so N <= (c+1)*T (softmax's `local_tile(X, (1, COLS), (block.x,
    0))`: N <= COLS). Past it, elements would be skipped, not reported: the launch refuses."""
    # A tensor argument, or a prepend/append of one: its name, and per mode the argument's mode
    # (None for the added one, which no size binds).
    names: dict[ir.Value, tuple[str, list[int | None]]] = {}
    found: dict[tuple[str, int], Requirement] = {}
    bindings = _bindings(func)
    broadcast = _broadcast_modes(func)

    def visit(op: ir.Operation) -> None:
        if op.name == "tile.make_tensor":
            rank = len(_modes(TensorType.of(op.results[0].type).layout_value().shape))
            names[op.results[0]] = (ir.StringAttr(op.attributes["name"]).value, [*range(rank)])
            return
        if op.name in ("tile.prepend", "tile.append") and op.operands[0] in names:
            tensor, modes = names[op.operands[0]]
            modes = [None, *modes] if op.name == "tile.prepend" else [*modes, None]
            names[op.results[0]] = (tensor, modes)
            return
        if op.name != "tile.local_tile" or op.operands[0] not in names:
            return
        tensor, modes = names[op.operands[0]]
        tile = list(ir.DenseI64ArrayAttr(op.attributes["tile"]))
        coord = _coord_entries(ir.StringAttr(op.attributes["coord"]).value)
        for entry, extent, mode in zip(coord, tile, modes, strict=False):
            size = None if mode is None else bindings.get((tensor, "shape", mode))
            if size is None or not entry.lstrip("-").isdigit() or (tensor, mode) in broadcast:
                continue
            bound = (int(entry) + 1) * extent
            key = (size, bound)
            if key not in found:
                why = (
                    f"{tensor} is tiled by {tuple(tile)} at coordinate {int(entry)} of mode "
                    f"{mode}, so only {bound} of its {size} are touched (compile with a larger "
                    "tile for larger sizes)"
                )
                found[key] = Requirement(size, bound, why)

    walk(func, visit)
    return tuple(found.values())


_WRITES = {"tile.store": 1, "tile.copy": 1, "tile.store_reduced": 1}  # op -> destination operand


def written_tensors(func: ir.Operation) -> set[str]:
    """The global tensors the kernel writes: the `tile.make_tensor` at the root of the view
    chain (local_tile, slice, ...) of every store or copy destination."""
    written: set[str] = set()

    def visit(op: ir.Operation) -> None:
        index = _WRITES.get(op.name)
        if index is not None and len(op.operands) > index:
            root = view_root(op.operands[index])
            if root is not None and root.name == "tile.make_tensor":
                written.add(ir.StringAttr(root.attributes["name"]).value)

    walk(func, visit)
    return written


def kernel_info(func: ir.Operation) -> KernelInfo:
    attrs = func.attributes
    name = ir.StringAttr(attrs["sym_name"]).value
    names = _attr_list(attrs["tile.arg_names"])
    arg_types = [str(a.type) for a in func.regions[0].blocks[0].arguments]
    bindings = _bindings(func)
    tensors = _tensor_types(func)
    written = written_tensors(func)
    params: list[Param] = []
    for arg, typ in zip(names, arg_types, strict=True):
        if typ.startswith("!llvm.ptr"):
            tensor = tensors[arg]
            layout = tensor.layout_value()
            shape = tuple(
                bindings.get((arg, "shape", d), extent if isinstance(extent, int) else "?")
                for d, extent in enumerate(_modes(layout.shape))
            )
            strides = _strides(arg, layout, bindings)
            intent = "inout" if arg in written else "in"
            params.append(TensorParam(arg, tensor.elem, shape, strides, intent=intent))
        elif typ == "index":
            params.append(SizeParam(arg))
        elif typ in SCALAR_DTYPES:
            params.append(ScalarParam(arg, SCALAR_DTYPES[typ]))
        else:
            raise fail(f"kernel '{name}': argument '{arg}' of type {typ} cannot be launched yet")
    threads = [int(t) for t in ir.DenseI64ArrayAttr(attrs["tile.threads"])]
    constants: dict[str, Any] = {}
    cparams = ir.DictAttr(attrs["tile.params"])
    for i in range(len(cparams)):
        named = cparams[i]
        if isinstance(named.attr, ir.IntegerAttr):
            constants[named.name] = ir.IntegerAttr(named.attr).value
    grid = tuple(_attr_list(attrs["tile.grid"]))
    return KernelInfo(
        name=name,
        target=ir.StringAttr(attrs["tile.target"]).value,
        threads=tuple((threads + [1, 1])[:3]),
        grid=(grid + ("1", "1"))[:3],
        params=tuple(params),
        constants=constants,
        requires=requirements(func) + assumptions(func),
        special=specialisation(func),
        cluster=ir.IntegerAttr(attrs["tile.cluster"]).value if "tile.cluster" in attrs else 1,
        variants=variants_of(func),
    )


def assumptions(func: ir.Operation) -> tuple[Requirement, ...]:
    """The kernel's assume(skn % 8 == 0, ...) facts (the `tile.assume` attribute), as launch
    requirements `skn % 8 <= 0`: the build's copies rely on them, so a launch that breaks one
    is refused, never run."""
    if ASSUME not in func.attributes:
        return ()
    facts = list(ir.DictAttr(func.attributes[ASSUME]))
    out = []
    for n in facts:
        fact = f"{n.name} % {ir.IntegerAttr(n.attr).value}"
        why = (
            f"the build assumes {fact} == 0 (its assume(...) clause), so its accesses test no "
            "other value: launch the kernel's bundle, whose variant(...) picks a build for these "
            "sizes, or a build without the clause"
        )
        out.append(Requirement(fact, 0, why))
    return tuple(out)


def variants_of(func: ir.Operation) -> tuple[Variant, ...]:
    """The `variant(K % 16 == 8, CM = 2)` clauses (the `tile.variants` attribute), in order:
    each one's condition formulas and the parameters its build sets."""
    if "tile.variants" not in func.attributes:
        return ()
    out = []
    for entry in ir.ArrayAttr(func.attributes["tile.variants"]):
        attr = ir.DictAttr(entry)
        sets = ir.DictAttr(attr["params"])
        params = {sets[i].name: ir.StringAttr(sets[i].attr).value for i in range(len(sets))}
        out.append(Variant(tuple(_attr_list(attr["when"])), params))
    return tuple(out)


def specialisation(func: ir.Operation) -> tuple[Requirement, ...]:
    """`specialize(N <= 4096)` (the `tile.specialize` attribute): the conditions under which
    the runtime launches the specialised variant (each size also at least 1)."""
    if SPECIALIZE not in func.attributes:
        return ()
    named = list(ir.DictAttr(func.attributes[SPECIALIZE]))
    return tuple(Requirement(n.name, str(ir.IntegerAttr(n.attr).value)) for n in named)


def kernels_of(tile_module: ir.Module) -> list[KernelInfo]:
    return [
        kernel_info(op.operation)
        for op in tile_module.body.operations
        if op.operation.name == "func.func" and "tile.kernel" in op.operation.attributes
    ]


@dataclass
class Compiled:
    """A compiled `.tile` file: its PTX, its wide (64-bit index) PTX, one manifest per kernel."""

    ptx: str
    manifests: list[Manifest]
    wide_ptx: str = ""
    special_ptx: str = ""  # with tile-specialize: for the kernels that have specialize(...)
    variants: dict[str, tuple[Variant, ...]] = field(default_factory=dict)  # by entry


def compile_tile(
    path: str, params: dict[str, str], arch: str | None, contracts: bool = True
) -> Compiled:
    """Compile `path` to PTX, and its wide variant, and describe each kernel (MLIR side;
    raises DiagnosticError; the kernels' contracts are checked unless `contracts` is False).
    The frontend and the `lowered` stage run once: the wide variant continues from a copy of
    the `lowered` module with `WIDE_GPU_PIPELINE`."""
    infos: list[KernelInfo] = []
    smem: dict[str, int] = {}
    lowered: list[str] = []

    def read(artifact: Artifact) -> None:
        # Read each stage as it goes by: the next stage rewrites the module in place.
        if artifact.stage == "tile":
            infos.extend(kernels_of(artifact.value))
        elif artifact.stage == "lowered":
            lowered.append(artifact.value.operation.get_asm(enable_debug_info=True))
        elif artifact.stage == "gpu":
            smem.update(dynamic_smem(artifact.value))
            tma.update(tma_descriptors(artifact.value))
            stateful.update(stateful_kernels(artifact.value))

    tma: dict[str, tuple[TmaDescriptor, ...]] = {}
    stateful: set[str] = set()
    options = CompileOptions(emit="ptx", arch=arch, params=params, contracts=contracts)
    ptx = compile_file(path, options, on_stage=read)
    source = Path(path).read_bytes()  # after compile_file, which reports an unreadable file
    target = ptx.arch or (infos[0].target if infos else None)
    wide = _compile_wide(path, lowered[0], target, smem) if infos else ""
    special = any(info.special for info in infos)
    special_ptx, special_smem = (
        _compile_special(path, params, arch, contracts) if special else ("", {})
    )
    digest = "sha256:" + hashlib.sha256(source).hexdigest()
    manifests = []
    for info in infos:
        manifests.append(
            Manifest(
                entry=info.name,
                target=ptx.arch or info.target,
                params=info.params
                + tuple(TmaParam(d.name, d.name) for d in tma.get(info.name, ())),
                tma=tma.get(info.name, ()),
                grid=info.grid,
                block=info.threads,
                cluster=info.cluster,
                stateful=info.name in stateful,
                dynamic_smem=smem.get(info.name, 0),
                constants=info.constants,
                source_hash=digest,
                source_params=dict(params),
                tilec_version=__version__,
                requires=info.requires,
                wide_ptx_file=f"{info.name}.wide.ptx",
                special=info.special,
                special_ptx_file=f"{info.name}.special.ptx" if info.special else "",
                special_dynamic_smem=_own_smem(info, smem, special_smem),
            )
        )
    variants = {info.name: info.variants for info in infos if info.variants}
    return Compiled(str(ptx.value), manifests, wide, special_ptx, variants)


def _compile_special(
    path: str, params: dict[str, str], arch: str | None, contracts: bool
) -> tuple[str, dict[str, int]]:
    """The PTX of `path` with `tile-specialize` (and the folding it enables) before lowering:
    each kernel with specialize(...) as the launches it names see it, and each kernel's dynamic
    shared memory there (loops folded away may leave it less scratch than the general build).
    The frontend runs again, so the variant is held to the kernels' contracts too."""
    lowered = f"{SPECIALIZE_PREFIX}{BY_KEY['lowered'].pipeline}"
    options = CompileOptions(
        emit="ptx", arch=arch, params=params, pipelines={"lowered": lowered}, contracts=contracts
    )
    return _variant(path, options)


def _own_smem(info: KernelInfo, smem: dict[str, int], special: dict[str, int]) -> int | None:
    """The specialised variant's dynamic shared memory, where it differs from the kernel's."""
    if not info.special or special.get(info.name, 0) == smem.get(info.name, 0):
        return None
    return special.get(info.name, 0)


def _compile_wide(path: str, lowered: str, arch: str | None, smem: dict[str, int]) -> str:
    """The PTX of the `lowered` module (printed with its locations) with 64-bit `index`."""
    options = CompileOptions(
        emit="ptx", arch=arch, start="lowered", pipelines={"gpu": WIDE_GPU_PIPELINE}
    )
    with tempfile.TemporaryDirectory(prefix="tilec-wide-") as tmp:
        copy = Path(tmp) / f"{Path(path).name.split('.')[0]}.lowered.mlir"
        copy.write_text(lowered)
        ptx, wide_smem = _variant(str(copy), options)
    # One manifest launches both: widening the indices must not move a buffer.
    assert wide_smem == smem, f"wide variant's dynamic smem {wide_smem} != {smem}"
    return ptx


def _variant(path: str, options: CompileOptions) -> tuple[str, dict[str, int]]:
    """The PTX of one variant of the kernels, and each kernel's dynamic shared memory in it."""
    variant_smem: dict[str, int] = {}

    def read(artifact: Artifact) -> None:
        if artifact.stage == "gpu":
            variant_smem.update(dynamic_smem(artifact.value))

    compiled = compile_file(path, options, on_stage=read)
    return str(compiled.value), variant_smem


def build(
    path: str,
    out_dir: str | Path,
    params: dict[str, str],
    arch: str | None,
    contracts: bool = True,
    variants: bool = True,
) -> list[Path]:
    """Write one bundle per kernel of `path` into `out_dir/<kernel>[_<arch>]`; a kernel with
    variant(...) clauses gets each variant's build as a bundle in its folder `variant`,
    `variant2`, ... (in the clauses' order, which is the order the runtime tries them in).
    `variants=False` leaves them out: the bundle runs its own parameters at every launch (what
    `tilec tune` times, and a tuned family build runs)."""
    compiled = compile_tile(path, params, arch, contracts)
    others: dict[tuple[str, ...], Compiled] = {}  # the file built with a variant's parameters
    written = []
    for manifest in compiled.manifests:
        suffix = f"_{arch.replace('_', '')}" if arch else ""
        target = Path(out_dir) / f"{manifest.entry}{suffix}"
        chosen = compiled.variants.get(manifest.entry, ()) if variants else ()
        folders = [variant_folder(i) for i in range(len(chosen))]
        manifest = replace(
            manifest,
            variants=tuple(
                VariantRef(v.when, folder) for v, folder in zip(chosen, folders, strict=True)
            ),
        )
        write_bundle(target, manifest, compiled.ptx, compiled.wide_ptx, compiled.special_ptx)
        for v, folder in zip(chosen, folders, strict=True):
            merged = {**params, **v.params}
            key = tuple(sorted(f"{k}={v}" for k, v in merged.items()))
            if key not in others:
                others[key] = compile_tile(path, merged, arch, contracts)
            other = others[key]
            found = next(m for m in other.manifests if m.entry == manifest.entry)
            write_bundle(target / folder, found, other.ptx, other.wide_ptx, other.special_ptx)
        written.append(target)
    return written


def variant_folder(i: int) -> str:
    """The folder of a bundle's `i`-th variant: `variant`, `variant2`, `variant3`, ..."""
    return VARIANT_BUNDLE if i == 0 else f"{VARIANT_BUNDLE}{i + 1}"


VARIANT_BUNDLE = "variant"
