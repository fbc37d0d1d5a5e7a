"""Runtime: the bundle (a directory with manifest.json + PTX) and its manifest schema."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilec.runtime.formula import FormulaError, symbols_of

# The schema's parts, also this module's API:
from tilec.runtime.params import (  # noqa: F401
    DEVICE_SYMBOLS,
    DTYPE_SIZES,
    INTENTS,
    SIZE_DTYPES,
    Dim,
    ManifestError,
    Param,
    Requirement,
    ScalarParam,
    SizeParam,
    TensorParam,
    TmaDescriptor,
    TmaParam,
)

FORMAT = "tilec-bundle"
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True)
class VariantRef:
    """A `variant(...)` build in a bundle: its conditions (formulas, all must hold for a launch
    to run it) and its folder."""

    when: tuple[str, ...]
    bundle: str


def _variants(data: dict[str, Any]) -> tuple[VariantRef, ...]:
    """The manifest's variants; `variant` (one, one condition) as bundles before lists wrote."""
    if "variant" in data:
        v = data["variant"]
        return (VariantRef((_req(v, "when", "variant"),), _req(v, "bundle", "variant")),)
    out = []
    for i, v in enumerate(data.get("variants", [])):
        when = _req(v, "when", f"variants[{i}]")
        if not isinstance(when, list) or not all(isinstance(w, str | int) for w in when):
            raise ManifestError(f"variants[{i}].when: expected a list of formulas")
        out.append(VariantRef(tuple(when), _req(v, "bundle", f"variants[{i}]")))
    return tuple(out)


@dataclass(frozen=True)
class Manifest:
    """Everything the runtime needs to launch one PTX entry."""

    entry: str
    target: str
    params: tuple[Param, ...]
    grid: tuple[Dim, Dim, Dim]
    block: tuple[Dim, Dim, Dim]
    dynamic_smem: Dim = 0
    constants: dict[str, int] = field(default_factory=dict)
    tma: tuple[TmaDescriptor, ...] = ()
    source_hash: str = ""
    source_params: dict[str, Any] = field(default_factory=dict)
    tilec_version: str = ""
    ptx_file: str = ""
    requires: tuple[Requirement, ...] = ()
    # The 64-bit-index variant's PTX file ("" when the bundle has none): launched when a tensor
    # spans 2^31 elements or more, which the ordinary PTX's 32-bit index cannot address.
    wide_ptx_file: str = ""
    # The specialised variant (the kernel's specialize(...) clause): launched instead of the
    # ordinary PTX when 1 <= value <= at_most holds for every entry of `special` (and the
    # launch does not need the wide variant).
    special: tuple[Requirement, ...] = ()
    special_ptx_file: str = ""
    # The specialised variant's dynamic shared memory where it differs from `dynamic_smem`
    # (its folded loops may need less scratch); None: the same.
    special_dynamic_smem: Dim | None = None
    # cluster(S): the PTX asks for clusters of S blocks along x (.reqnctapercluster), so a
    # launch's grid along x must be a multiple of S.
    cluster: int = 1
    # variant(K % 16 == 8, CM = 2) clauses: the kernel built with other parameters, each a
    # bundle in a folder of this one; a launch runs the first whose conditions (comparisons of
    # sizes, `num_sms` too) all hold, else this kernel.
    variants: tuple[VariantRef, ...] = ()
    # The kernel keeps state in its module's global memory between the blocks of a launch (a
    # split tail's partial sums and flags): launches of one loaded module must not overlap,
    # so the runtime orders a launch on another stream after the module's last one.
    stateful: bool = False

    def __post_init__(self) -> None:
        validate(self)
        if not self.ptx_file:
            object.__setattr__(self, "ptx_file", f"{self.entry}.ptx")  # frozen dataclass
        files = (
            ("ptx", self.ptx_file),
            ("wide_ptx", self.wide_ptx_file),
            ("special_ptx", self.special_ptx_file),
        )
        for key, name in files:
            if name and (Path(name).name != name or name.startswith(".")):
                raise ManifestError(f"{key}: {name!r} must be a file name inside the bundle")
        if self.wide_ptx_file == self.ptx_file:
            raise ManifestError(f"wide_ptx: {self.wide_ptx_file!r} is the ordinary PTX file")
        if bool(self.special) != bool(self.special_ptx_file):
            raise ManifestError("special and special_ptx: one names no variant the other does")
        if self.special_dynamic_smem is not None and not self.special_ptx_file:
            raise ManifestError("special_dynamic_smem: the manifest has no specialised variant")
        for i, v in enumerate(self.variants):
            if not v.when or not v.bundle:
                raise ManifestError(f"variants[{i}]: needs conditions and a bundle")
            if Path(v.bundle).name != v.bundle or v.bundle.startswith("."):
                raise ManifestError(f"variants[{i}]: {v.bundle!r} must be a folder in the bundle")
        if len({v.bundle for v in self.variants}) != len(self.variants):
            raise ManifestError("variants: two name the same bundle")
        if self.special_ptx_file and self.special_ptx_file in (self.ptx_file, self.wide_ptx_file):
            raise ManifestError(f"special_ptx: {self.special_ptx_file!r} is another variant's")

    def tensors(self) -> list[TensorParam]:
        return [p for p in self.params if isinstance(p, TensorParam)]

    def symbols(self) -> set[str]:
        """Every name a formula may use: constants, shape and stride symbols, size parameters,
        integer scalars."""
        names = set(self.constants)
        for tensor in self.tensors():
            names |= {d for d in tensor.shape if isinstance(d, str) and d.isidentifier()}
            names |= stride_symbols(tensor)
        names |= {p.name for p in self.params if isinstance(p, SizeParam)}
        names |= {p.name for p in self.params if isinstance(p, ScalarParam) and p.integer}
        return names

    def to_json(self) -> dict[str, Any]:
        params = []
        for p in self.params:
            if isinstance(p, TensorParam):
                params.append(
                    {
                        "kind": "tensor",
                        "name": p.name,
                        "dtype": p.dtype,
                        "shape": list(p.shape),
                        "strides": None if p.strides is None else list(p.strides),
                        "align": p.align,
                        "intent": p.intent,
                    }
                )
            elif isinstance(p, SizeParam):
                src = None if p.source is None else [p.source[0], p.source[1]]
                params.append({"kind": "size", "name": p.name, "from": src, "dtype": p.dtype})
            elif isinstance(p, ScalarParam):
                params.append({"kind": "scalar", "name": p.name, "dtype": p.dtype})
            else:
                params.append({"kind": "tma", "name": p.name, "descriptor": p.descriptor})
        tma = [
            {
                "name": d.name,
                "tensor": d.tensor,
                "box": list(d.box),
                "swizzle": d.swizzle,
                "interleave": d.interleave,
                "l2_promotion": d.l2_promotion,
                "oob_fill": d.oob_fill,
                "element_strides": None if d.element_strides is None else list(d.element_strides),
                "optional": d.optional,
                "order": None if d.order is None else list(d.order),
            }
            for d in self.tma
        ]
        data = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "tilec_version": self.tilec_version,
            "entry": self.entry,
            "target": self.target,
            "ptx": self.ptx_file,
            "params": params,
            "constants": dict(self.constants),
            "grid": list(self.grid),
            "block": list(self.block),
            "dynamic_smem": self.dynamic_smem,
            "tma": tma,
            "source": {"hash": self.source_hash, "params": dict(self.source_params)},
            "requires": [
                {"value": r.value, "at_most": r.at_most, "why": r.why} for r in self.requires
            ],
        }
        if self.wide_ptx_file:  # optional: a manifest without it reads as before
            data["wide_ptx"] = self.wide_ptx_file
        if self.cluster > 1:  # optional, as wide_ptx
            data["cluster"] = self.cluster
        if self.variants:  # optional, as wide_ptx
            data["variants"] = [{"when": list(v.when), "bundle": v.bundle} for v in self.variants]
        if self.stateful:  # optional, as wide_ptx
            data["stateful"] = True
        if self.special_ptx_file:  # optional, as wide_ptx
            data["special_ptx"] = self.special_ptx_file
            data["special"] = [{"value": r.value, "at_most": r.at_most} for r in self.special]
            if self.special_dynamic_smem is not None:
                data["special_dynamic_smem"] = self.special_dynamic_smem
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        return _from_json(data)


def stride_symbols(tensor: TensorParam) -> set[str]:
    """The size symbols a tensor's strides name: bound at launch from the tensor's strides."""
    return {d for d in tensor.strides or () if isinstance(d, str) and d.isidentifier()}


def _req(data: dict[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise ManifestError(f"{where}: missing field {key!r}")
    return data[key]


def _dims(value: Any, where: str) -> tuple[Dim, ...]:
    if not isinstance(value, list) or not all(
        isinstance(d, int | str) and not isinstance(d, bool) for d in value
    ):
        raise ManifestError(f"{where}: expected a list of ints and strings, got {value!r}")
    return tuple(value)


def _param_from_json(item: Any, i: int) -> Param:
    where = f"params[{i}]"
    if not isinstance(item, dict):
        raise ManifestError(f"{where}: expected an object, got {item!r}")
    kind = _req(item, "kind", where)
    name = _req(item, "name", where)
    where = f"params[{i}] ({name!r})"
    if kind == "tensor":
        strides = item.get("strides")
        return TensorParam(
            name=name,
            dtype=_req(item, "dtype", where),
            shape=_dims(_req(item, "shape", where), f"{where}.shape"),
            strides=None if strides is None else _dims(strides, f"{where}.strides"),
            align=item.get("align", 16),
            intent=item.get("intent", "inout"),
        )
    if kind == "size":
        src = item.get("from")
        if src is not None and (
            not isinstance(src, list) or len(src) != 2 or not isinstance(src[1], int)
        ):
            raise ManifestError(f"{where}.from: expected [tensor name, dim], got {src!r}")
        return SizeParam(
            name=name,
            source=None if src is None else (src[0], src[1]),
            dtype=item.get("dtype", "i64"),
        )
    if kind == "scalar":
        return ScalarParam(name=name, dtype=_req(item, "dtype", where))
    if kind == "tma":
        return TmaParam(name=name, descriptor=item.get("descriptor", name))
    raise ManifestError(f"{where}: unknown kind {kind!r} (tensor, size, scalar, tma)")


def _from_json(data: dict[str, Any]) -> Manifest:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ManifestError(f"not a tilec bundle manifest (field 'format' must be {FORMAT!r})")
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise ManifestError(
            f"format_version {version!r} is not supported (this runtime reads {FORMAT_VERSION})"
        )
    params = _req(data, "params", "manifest")
    if not isinstance(params, list):
        raise ManifestError("params: expected a list")
    tma = []
    for i, d in enumerate(data.get("tma", [])):
        where = f"tma[{i}]"
        strides = d.get("element_strides")
        tma.append(
            TmaDescriptor(
                name=_req(d, "name", where),
                tensor=_req(d, "tensor", where),
                box=_dims(_req(d, "box", where), f"{where}.box"),
                swizzle=d.get("swizzle", "none"),
                interleave=d.get("interleave", "none"),
                l2_promotion=d.get("l2_promotion", "none"),
                oob_fill=d.get("oob_fill", "none"),
                element_strides=None if strides is None else tuple(strides),
                optional=bool(d.get("optional", False)),
                order=None if d.get("order") is None else tuple(d["order"]),
            )
        )
    source = data.get("source", {})
    return Manifest(
        entry=_req(data, "entry", "manifest"),
        target=_req(data, "target", "manifest"),
        params=tuple(_param_from_json(p, i) for i, p in enumerate(params)),
        grid=tuple(_dims(_req(data, "grid", "manifest"), "grid")),  # type: ignore[arg-type]
        block=tuple(_dims(_req(data, "block", "manifest"), "block")),  # type: ignore[arg-type]
        dynamic_smem=data.get("dynamic_smem", 0),
        constants=dict(data.get("constants", {})),
        tma=tuple(tma),
        source_hash=source.get("hash", ""),
        source_params=dict(source.get("params", {})),
        tilec_version=data.get("tilec_version", ""),
        ptx_file=data.get("ptx", ""),
        wide_ptx_file=data.get("wide_ptx") or "",
        special_ptx_file=data.get("special_ptx") or "",
        special_dynamic_smem=data.get("special_dynamic_smem"),
        cluster=data.get("cluster", 1),
        variants=_variants(data),
        stateful=data.get("stateful", False),
        special=tuple(
            Requirement(_req(r, "value", f"special[{i}]"), _req(r, "at_most", f"special[{i}]"))
            for i, r in enumerate(data.get("special", []))
        ),
        requires=tuple(
            Requirement(
                _req(r, "value", f"requires[{i}]"),
                _req(r, "at_most", f"requires[{i}]"),
                r.get("why", ""),
            )
            for i, r in enumerate(data.get("requires", []))
        ),
    )


def _check_formula(formula: Dim, symbols: set[str], where: str) -> None:
    try:
        unknown = symbols_of(formula) - symbols
    except FormulaError as err:
        raise ManifestError(f"{where}: {err}") from None
    if unknown:
        raise ManifestError(f"{where}: formula {formula!r} uses unknown symbols {sorted(unknown)}")


def validate(m: Manifest) -> None:
    """Raises ManifestError on the first inconsistency, naming the field."""
    if not m.entry or not isinstance(m.entry, str):
        raise ManifestError("entry: expected a non-empty string")
    if type(m.cluster) is not int or not 1 <= m.cluster <= 16 or m.cluster & (m.cluster - 1):
        raise ManifestError(f"cluster: {m.cluster!r} is not a power of two from 1 to 16")
    if type(m.stateful) is not bool:
        raise ManifestError(f"stateful: expected true or false, got {m.stateful!r}")
    names = [p.name for p in m.params]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ManifestError(f"params: duplicate names {dupes}")
    bad_constants = [k for k, v in m.constants.items() if type(v) is not int]
    if bad_constants:
        raise ManifestError(f"constants: {bad_constants} must be integers")
    tensors = {t.name: t for t in m.tensors()}
    symbols = m.symbols()
    for p in m.params:
        where = f"param {p.name!r}"
        if isinstance(p, TensorParam):
            if p.dtype not in DTYPE_SIZES:
                raise ManifestError(f"{where}: unknown dtype {p.dtype!r}")
            if p.strides is not None and len(p.strides) != len(p.shape):
                raise ManifestError(f"{where}: strides and shape have different ranks")
            if p.align <= 0 or p.align & (p.align - 1):
                raise ManifestError(f"{where}: align {p.align} is not a power of two")
            if p.intent not in INTENTS:
                raise ManifestError(f"{where}: intent {p.intent!r} not one of {INTENTS}")
            for d in (*p.shape, *(p.strides or ())):
                _check_formula(d, symbols, f"{where}")
        elif isinstance(p, SizeParam):
            if p.dtype not in SIZE_DTYPES:
                raise ManifestError(f"{where}: size dtype must be one of {SIZE_DTYPES}")
            if p.source is not None:
                tensor, dim = p.source
                if tensor not in tensors:
                    raise ManifestError(f"{where}: 'from' names unknown tensor {tensor!r}")
                if not 0 <= dim < len(tensors[tensor].shape):
                    raise ManifestError(f"{where}: 'from' dim {dim} out of range for {tensor!r}")
            elif not any(p.name in (*t.shape, *(t.strides or ())) for t in tensors.values()):
                raise ManifestError(
                    f"{where}: no 'from' and no tensor shape or stride names {p.name!r}"
                )
        elif isinstance(p, ScalarParam):
            if p.dtype not in DTYPE_SIZES:
                raise ManifestError(f"{where}: unknown dtype {p.dtype!r}")
        elif p.descriptor not in {d.name for d in m.tma}:
            raise ManifestError(f"{where}: no tma descriptor named {p.descriptor!r}")
    if len(m.grid) != 3 or len(m.block) != 3:
        raise ManifestError("grid and block: expected 3 entries each (x, y, z)")
    for axis, f in zip("xyz", m.grid, strict=True):
        _check_formula(f, symbols | DEVICE_SYMBOLS, f"grid.{axis}")
    for axis, f in zip("xyz", m.block, strict=True):
        _check_formula(f, symbols, f"block.{axis}")
    _check_formula(m.dynamic_smem, symbols, "dynamic_smem")
    if m.special_dynamic_smem is not None:
        _check_formula(m.special_dynamic_smem, symbols, "special_dynamic_smem")
    for i, v in enumerate(m.variants):
        for j, when in enumerate(v.when):
            _check_formula(when, symbols | DEVICE_SYMBOLS, f"variants[{i}].when[{j}]")
    for key, reqs in (("requires", m.requires), ("special", m.special)):
        for i, r in enumerate(reqs):
            _check_formula(r.value, symbols, f"{key}[{i}].value")
            _check_formula(r.at_most, symbols, f"{key}[{i}].at_most")
    for d in m.tma:
        if d.tensor not in tensors:
            raise ManifestError(f"tma {d.name!r}: unknown tensor {d.tensor!r}")
        if len(d.box) != len(tensors[d.tensor].shape):
            raise ManifestError(f"tma {d.name!r}: box rank differs from {d.tensor!r}'s rank")
        for b in d.box:
            _check_formula(b, symbols, f"tma {d.name!r}.box")


def read_bundle(path: str | os.PathLike[str]) -> tuple[Manifest, str]:
    """The manifest and PTX text of the bundle directory at `path`."""
    root = Path(path)
    manifest_path = root / MANIFEST_NAME
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{root}: not a tilec bundle (no {MANIFEST_NAME})")
    try:
        data = json.loads(manifest_path.read_text())
    except json.JSONDecodeError as err:
        raise ManifestError(f"{manifest_path}: invalid JSON: {err}") from None
    manifest = Manifest.from_json(data)
    return manifest, _read_ptx(root, manifest.ptx_file)


def read_wide_ptx(path: str | os.PathLike[str], manifest: Manifest) -> str:
    """The wide variant's PTX of the bundle at `path` ("" when its manifest names none)."""
    return _read_ptx(Path(path), manifest.wide_ptx_file) if manifest.wide_ptx_file else ""


def read_special_ptx(path: str | os.PathLike[str], manifest: Manifest) -> str:
    """The specialised variant's PTX of the bundle at `path` ("" when it has none)."""
    name = manifest.special_ptx_file
    return _read_ptx(Path(path), name) if name else ""


def _read_ptx(root: Path, name: str) -> str:
    ptx_path = root / name
    if not ptx_path.is_file():
        raise FileNotFoundError(f"{root}: manifest names PTX file {ptx_path.name!r}, not there")
    return ptx_path.read_text()


def write_bundle(
    path: str | os.PathLike[str],
    manifest: Manifest,
    ptx: str,
    wide_ptx: str = "",
    special_ptx: str = "",
) -> Path:
    """Writes a bundle directory at `path`; an existing bundle there is replaced atomically.

    `wide_ptx` is the 64-bit-index variant, written as the manifest's `wide_ptx` file (given
    exactly when the manifest names one), `special_ptx` its `special_ptx` file (needed when the
    manifest names one; a module's kernels share it, so it is dropped for a manifest that names
    none). The files go to a sibling temp directory first and are renamed into place, so a
    reader never sees a half-written bundle.
    """
    if bool(wide_ptx) != bool(manifest.wide_ptx_file):
        have = "a wide PTX" if wide_ptx else "no wide PTX"
        raise ManifestError(f"{manifest.entry}: {have}, but wide_ptx is {manifest.wide_ptx_file!r}")
    if manifest.special_ptx_file and not special_ptx:
        raise ManifestError(f"{manifest.entry}: no special PTX, but special_ptx is named")
    root = Path(path)
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}.", dir=root.parent))
    # mkdtemp makes the directory 0700; a bundle is shared like one mkdir would make (umask).
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)
    data = manifest.to_json()
    (tmp / data["ptx"]).write_text(ptx)
    if wide_ptx:
        (tmp / manifest.wide_ptx_file).write_text(wide_ptx)
    if manifest.special_ptx_file:
        (tmp / manifest.special_ptx_file).write_text(special_ptx)
    (tmp / MANIFEST_NAME).write_text(json.dumps(data, indent=2) + "\n")
    if root.exists():
        # A directory cannot be renamed over a non-empty one: move the old one aside first.
        old = Path(tempfile.mkdtemp(prefix=f".{root.name}.old.", dir=root.parent))
        os.replace(root, old / "b")
        os.replace(tmp, root)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, root)
    return root
