"""Runtime: a kernel family, several builds of one or more kernels and the rules that pick one
for each launch (imports no MLIR; a build not on disk compiles through the cache where MLIR is).

A family is a directory holding `family.json` and one bundle per build:

    softmax/
      family.json          # format "tilec-family": the arguments, the builds, the rules
      c1024_f16_sm90a/     # a bundle (manifest.json + PTX), one per built build
      ...

A launch runs the first rule that applies: its build runs on the device (`sm_90a` on SM 9.0
only, `sm_80` on SM 8.0 and later), its `dtypes` are the arguments', the build's manifest binds
the arguments (dtypes, ranks, strides, alignment, `requires`) and each of its `when` formulas
holds over the sizes bound and `num_sms`. The choice is made once per argument signature (shapes,
strides, dtypes, devices, 16-byte alignment of each pointer), as a kernel's launch plans are:
a later call with the same signature reads a dict and launches (`bench/bench_dispatch.py`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilec.runtime import driver
from tilec.runtime.binding import Binding, bind
from tilec.runtime.bundle import MANIFEST_NAME, ManifestError, ScalarParam, TensorParam
from tilec.runtime.formula import FormulaError, all_hold, symbols_of
from tilec.runtime.kernel import PLAN_LIMIT, Kernel, load
from tilec.runtime.signature import Signer
from tilec.runtime.tensors import as_view

FAMILY_FORMAT = "tilec-family"
FAMILY_VERSION = 1
FAMILY_FILE = "family.json"
ARCHS = ("sm_80", "sm_90a")


class FamilyError(ValueError):
    """A family that cannot be read, or a launch that no rule of it takes."""


@dataclass(frozen=True)
class Build:
    """One build of a family: a kernel of a `.tile` file with parameters, for a target."""

    name: str
    source: str  # the .tile file, relative to the family's root (to compile where it is missing)
    kernel: str
    params: dict[str, str]
    arch: str
    bundle: str = ""  # its folder in the family directory; "" until it is built
    # built with the kernel's variant(...) clauses (False: a tuned build, which runs its own
    # parameters at every launch, as `tilec tune` timed it)
    variants: bool = True


@dataclass(frozen=True)
class Rule:
    """Where `build` runs: every formula of `when` holds (sizes and `num_sms`), the arguments
    have `dtypes`, and the device is one of `devices` (e.g. "sm_90"; empty: any that runs it)."""

    build: str
    when: tuple[str, ...] = ()
    dtypes: dict[str, str] = field(default_factory=dict)
    devices: tuple[str, ...] = ()
    note: str = ""  # where it came from: a bucket's reason, a tuning run's figure


@dataclass(frozen=True)
class FamilySpec:
    """What family.json says: the user arguments in launch order (name, "tensor" or "scalar"),
    the builds by name, the rules in order, and the folder sources are relative to."""

    name: str
    args: tuple[tuple[str, str], ...]
    builds: dict[str, Build]
    rules: tuple[Rule, ...]
    root: str = ""
    # size -> (tensor argument, dim): rules naming only these are tested before their build is
    # loaded (or compiled on demand); other names need the build's manifest to bind them
    sizes: dict[str, tuple[str, int]] = field(default_factory=dict)
    # name -> (tensor argument, dim): that dim's stride in elements, which rules may name as
    # they name sizes (a GEMM's majorness: "SA_K == 1"); always known before binding
    strides: dict[str, tuple[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FAMILY_FORMAT,
            "format_version": FAMILY_VERSION,
            "name": self.name,
            "args": [{"name": n, "kind": k} for n, k in self.args],
            "builds": [_build_json(b) for b in self.builds.values()],
            "rules": [_rule_json(r) for r in self.rules],
            **({"sizes": {k: list(v) for k, v in self.sizes.items()}} if self.sizes else {}),
            **({"strides": {k: list(v) for k, v in self.strides.items()}} if self.strides else {}),
            **({"root": self.root} if self.root else {}),
        }

    @staticmethod
    def from_json(data: Any, where: str = FAMILY_FILE) -> FamilySpec:
        try:
            return _spec(data)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise FamilyError(f"{where}: {err}") from None


def _build_json(b: Build) -> dict[str, Any]:
    out = {"name": b.name, "source": b.source, "kernel": b.kernel, "params": b.params}
    out = {**out, "arch": b.arch, **({"bundle": b.bundle} if b.bundle else {})}
    return {**out, **({} if b.variants else {"variants": False})}


def _rule_json(r: Rule) -> dict[str, Any]:
    out: dict[str, Any] = {"build": r.build, "when": list(r.when)}
    if r.dtypes:
        out["dtypes"] = r.dtypes
    if r.devices:
        out["devices"] = list(r.devices)
    return {**out, **({"note": r.note} if r.note else {})}


def _spec(data: Any) -> FamilySpec:
    if data.get("format") != FAMILY_FORMAT or data.get("format_version") != FAMILY_VERSION:
        raise ValueError(f"not a {FAMILY_FORMAT} version {FAMILY_VERSION} file")
    args = tuple((str(a["name"]), str(a["kind"])) for a in data["args"])
    if any(kind not in ("tensor", "scalar") for _, kind in args):
        raise ValueError("args: each kind is 'tensor' or 'scalar'")
    builds: dict[str, Build] = {}
    for b in data["builds"]:
        build = Build(
            str(b["name"]),
            str(b["source"]),
            str(b["kernel"]),
            {str(k): str(v) for k, v in b.get("params", {}).items()},
            str(b["arch"]),
            str(b.get("bundle", "")),
            bool(b.get("variants", True)),
        )
        if build.arch not in ARCHS:
            raise ValueError(f"build {build.name!r}: arch {build.arch!r} is not one of {ARCHS}")
        if build.name in builds:
            raise ValueError(f"build {build.name!r} is named twice")
        if build.bundle and (Path(build.bundle).name != build.bundle or build.bundle[0] == "."):
            raise ValueError(f"build {build.name!r}: bundle {build.bundle!r} is not a folder name")
        builds[build.name] = build
    rules = tuple(_rule(r, builds) for r in data["rules"])
    tensors = {n for n, kind in args if kind == "tensor"}
    dims = {}
    for key in ("sizes", "strides"):
        dims[key] = {str(k): (str(v[0]), int(v[1])) for k, v in data.get(key, {}).items()}
        if any(arg not in tensors or dim < 0 for arg, dim in dims[key].values()):
            raise ValueError(f"{key}: each is [a tensor argument, a dim]")
    root = str(data.get("root", ""))
    return FamilySpec(str(data["name"]), args, builds, rules, root, dims["sizes"], dims["strides"])


def _rule(r: Any, builds: dict[str, Build]) -> Rule:
    rule = Rule(
        str(r["build"]),
        tuple(str(w) for w in r.get("when", [])),
        {str(k): str(v) for k, v in r.get("dtypes", {}).items()},
        tuple(str(d) for d in r.get("devices", [])),
        str(r.get("note", "")),
    )
    if rule.build not in builds:
        raise ValueError(f"a rule names build {rule.build!r}, which the family does not have")
    for formula in rule.when:
        try:
            symbols_of(formula)
        except FormulaError as err:
            raise ValueError(f"rule for {rule.build!r}: {err}") from None
    return rule


def read_family(path: str | os.PathLike[str]) -> FamilySpec:
    """The spec in `path`: a family directory or a family.json file."""
    where = Path(path)
    file = where / FAMILY_FILE if where.is_dir() else where
    try:
        data = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise FamilyError(f"{file}: cannot read a family: {err}") from None
    return FamilySpec.from_json(data, str(file))


def device_arch(device: int | None) -> str:
    """The device's compute capability as an arch name: `sm_90` for SM 9.0."""
    major, minor = driver.capability(device)
    return f"sm_{major}{minor}"


def runs_on(target: str, arch: str) -> bool:
    """Whether PTX built for `target` loads on a device of `arch` (`sm_90a` only on SM 9.0)."""
    if target == "sm_90a":
        return arch == "sm_90"
    return int(arch[3:]) >= int(target[3:].rstrip("a"))


Compiler = Callable[[Build, Path], Path]


class Family:
    """A loaded family: `family(*args, stream=None)` launches the build its rules pick.

    Builds load lazily from the family directory; one with no bundle there is compiled through
    the compile cache by `compile_build` (tilec.cache.cached_build where MLIR is installed)."""

    def __init__(
        self,
        spec: FamilySpec,
        directory: str | os.PathLike[str] | None = None,
        compile_build: Compiler | None = None,
    ) -> None:
        self.spec = spec
        self.directory = Path(directory) if directory is not None else None
        self._compile = compile_build
        self._kernels: dict[str, Kernel] = {}
        self._failed: dict[str, str] = {}  # builds that did not compile on demand: why
        self._plans: dict[tuple[Any, ...], tuple[Kernel, Launch | None]] = {}
        # The arguments as a kernel's parameters, for `signature` (it reads each one's name,
        # kind and alignment: 16 bytes, a manifest's default; dtypes and shapes are the builds').
        self._params = [
            ScalarParam(n, "f32") if kind == "scalar" else TensorParam(n, "f16", ())
            for n, kind in spec.args
        ]
        self._sign = Signer(self._params, frozenset())

    def __repr__(self) -> str:
        return f"<tilec.Family {self.spec.name}: {len(self.spec.builds)} builds>"

    @property
    def root(self) -> Path:
        """The folder the builds' sources are relative to."""
        if self.spec.root and Path(self.spec.root).is_absolute():
            return Path(self.spec.root)
        base = self.directory if self.directory is not None else Path.cwd()
        return base / self.spec.root if self.spec.root else repository_root()

    def kernel(self, name: str) -> Kernel:
        """The Kernel of build `name`: its bundle, else compiled (and cached) on demand."""
        if name in self._kernels:
            return self._kernels[name]
        build = self.spec.builds[name]
        folder = self.directory / build.bundle if self.directory and build.bundle else None
        if name in self._failed:
            raise FamilyError(self._failed[name])
        if folder is not None and (folder / MANIFEST_NAME).is_file():
            kernel = load(folder)
        elif self._compile is not None:
            try:
                kernel = load(self._compile(build, self.root))
            except Exception as err:  # a diagnostic, a broken contract: the rule is passed over
                self._failed[name] = f"build {name} does not compile: {err}"
                raise FamilyError(self._failed[name]) from None
        else:
            raise FamilyError(
                f"family {self.spec.name}: build {name!r} has no bundle"
                f"{f' in {self.directory}' if self.directory else ''} and nothing to compile it "
                f"with (MLIR is not installed): build the family where MLIR is "
                f"(`tilec family build`)"
            )
        self._kernels[name] = kernel
        return kernel

    def select(self, *args: Any) -> str:
        """The name of the build a launch with `args` runs (binds; the GPU is asked its
        capability and, for a rule naming it, its SM count)."""
        return self._choose(args)[2]

    def _choose(self, args: tuple[Any, ...]) -> tuple[Kernel, bool, str]:
        views = _views(self._params, args)
        device = next((v.device for v in views.values() if v.device is not None), None)
        arch = device_arch(device)
        refused: list[str] = []
        for rule in self.spec.rules:
            build = self.spec.builds[rule.build]
            if not runs_on(build.arch, arch) or (rule.devices and arch not in rule.devices):
                continue
            wrong = [n for n, d in rule.dtypes.items() if n in views and views[n].dtype != d]
            if wrong or not self._may_hold(rule, views, device):
                continue
            try:
                kernel = self.kernel(rule.build)
                b = _bind(kernel, args)
            except (TypeError, ValueError, ManifestError) as err:
                refused.append(f"{rule.build}: {err}")
                continue
            symbols = {**b.symbols, **self._strides(views)}
            if any("num_sms" in symbols_of(w) for w in rule.when):
                symbols.update(kernel.device_symbols(device))
            if all_hold(rule.when, symbols):
                alike = kernel.takes_key_of(self._params)  # its plans may take the family's key
                return kernel, alike, rule.build
        shapes = ", ".join(f"{n}: {v.dtype}{list(v.shape)}" for n, v in views.items())
        tried = "".join(f"\n  {r}" for r in refused)
        raise FamilyError(f"family {self.spec.name}: no rule takes ({shapes}) on {arch}{tried}")

    def _strides(self, views: dict[str, Any]) -> dict[str, int]:
        """The spec's `strides` of the arguments (those of a rank that has the dim)."""
        out: dict[str, int] = {}
        for name, (arg, dim) in self.spec.strides.items():
            strides = views[arg].strides
            if dim < len(strides):
                out[name] = strides[dim]
        return out

    def _may_hold(self, rule: Rule, views: dict[str, Any], device: int | None) -> bool:
        """False where one of the rule's formulas that name only the spec's `sizes` and
        `strides` (and `num_sms`) fails: then its build need not be loaded or compiled to pass
        it over."""
        known: dict[str, int] = self._strides(views)
        for name, (arg, dim) in self.spec.sizes.items():
            shape = views[arg].shape
            if dim < len(shape):
                known[name] = shape[dim]
        decidable = [w for w in rule.when if symbols_of(w) <= {*known, "num_sms"}]
        if any("num_sms" in symbols_of(w) for w in decidable):
            known["num_sms"] = driver.sm_count(device)
        return all_hold(decidable, known)

    def __call__(self, *args: Any, stream: Any = None) -> None:
        key, ptrs, _alive = self._sign(args)
        if not key:  # host arrays: bind and choose every time
            return self._choose(args)[0](*args, stream=stream)
        kernel, launch = self._planned(key, args)
        if launch is not None:  # chosen and planned: launch with this call's pointers
            return launch(ptrs, args, stream)
        return kernel(*args, stream=stream)

    def launch(self, *args: Any) -> Launch | None:
        """The launch a call with `args` makes (the build chosen, the kernel's plan made, as a
        call makes them), for a caller that keys its calls itself (tilec.ops): `launch(ptrs,
        args)` with the pointers of a later call of the same signature launches it. None where
        the call cannot be planned (host arrays, a kernel that signs it otherwise)."""
        key, _ptrs, _alive = self._sign(args)
        return self._planned(key, args)[1] if key else None

    def _planned(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> tuple[Kernel, Launch | None]:
        """The kernel chosen for signature `key` and, where it signs a call as the family
        does, its planned launch: chosen once per signature."""
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= PLAN_LIMIT:
                self._plans.clear()
            kernel, alike, _ = self._choose(args)
            found = kernel.planned(key, args) if alike else None
            plan = self._plans[key] = (kernel, Launch(*found) if found else None)
        return plan


class Launch:
    """One argument signature's launch, its build chosen and its kernel's plan made: calling
    it with a call's tensor pointers (in argument order) and its arguments (of which only the
    scalars are read, converted and checked) launches on `stream` (None: the caller's
    framework's current one). The pointers must be those of a call with the signature it was
    made for: the binding's checks ran for that signature."""

    __slots__ = ("kernel", "plan")

    def __init__(self, kernel: Kernel, plan: Any) -> None:
        self.kernel, self.plan = kernel, plan

    def __call__(self, ptrs: list[int], args: tuple[Any, ...], stream: Any = None) -> None:
        return self.kernel.launch_planned(self.plan, ptrs, args, stream)


def _views(params: list[Any], args: tuple[Any, ...]) -> dict[str, Any]:
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise TypeError(f"takes {len(params)} arguments ({names}), got {len(args)}")
    return {
        p.name: as_view(a, p.name)
        for p, a in zip(params, args, strict=True)
        if isinstance(p, TensorParam)
    }


def _bind(kernel: Kernel, args: tuple[Any, ...]) -> Binding:
    return bind(kernel.manifest, args, kernel.device_symbols)


def repository_root() -> Path:
    """The checkout holding this package (examples/ lives there): sources default to it."""
    return Path(__file__).resolve().parents[2]


def open_family(
    path: str | os.PathLike[str], compile_build: Compiler | None | bool = True
) -> Family:
    """The family in directory `path` (or a bare family.json, whose builds all compile on
    demand). `compile_build=True` compiles missing builds through the cache where MLIR is
    installed (`tilec.cache.cached_build`), False never compiles."""
    where = Path(path)
    spec = read_family(where)
    directory = where if where.is_dir() else None
    return Family(
        spec, directory, default_compiler() if compile_build is True else compile_build or None
    )


def default_compiler() -> Compiler | None:
    """tilec.cache.cached_build where MLIR is importable, else None."""
    import importlib.util

    if importlib.util.find_spec("mlir") is None:
        return None

    def compile_build(build: Build, root: Path) -> Path:
        from tilec.cache import cached_build

        return cached_build(
            str(root / build.source), build.kernel, build.params, build.arch, build.variants
        )

    return compile_build
