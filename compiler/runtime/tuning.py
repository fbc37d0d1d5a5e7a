"""Runtime: the timing half of `tilec tune` (no MLIR): a plan's candidate bundles timed on each
shape by the bench method and ranked; runtime/tuning_table.py writes the tuning table a family
reads.

A plan is a directory written by the compile half (`tilec tune --compile-only`):

    plan/
      tune.json        # format "tilec-tune-plan": the kernel, shapes, and each candidate's
                       # parameters, bundle, ptxas facts and why it was pruned (or null)
      c0/<bundle>/ ...

Each shape's surviving candidates (those whose manifest binds the shape) run in interleaved
rounds (every candidate once a round, `rounds` rounds, each figure the median), timed with
CUDA graphs where torch is there (the GPU's time alone, as the benches do), else with
back-to-back launches and events. A shape's result is cached under $TILEC_CACHE_DIR/tune by the
source's hash, tilec's version, the GPU's name and driver, the tensors' dtypes, the shape's
bucket and the candidates, so a second run (or another process) does not time it again.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilec import __version__
from tilec.runtime import driver
from tilec.runtime.binding import bind, user_params
from tilec.runtime.bundle import TensorParam
from tilec.runtime.formula import evaluate
from tilec.runtime.kernel import Kernel, load
from tilec.runtime.measure import (
    bytes_moved,
    random_args,
    shapes,
    stored,
    time_graph_ms,
    time_ms,
    unit_mode_last,
)
from tilec.runtime.tune_outputs import check_outputs, written

PLAN_FILE = "tune.json"
PLAN_FORMAT = "tilec-tune-plan"
TABLE_FORMAT = "tilec-tuning"
FORMAT_VERSION = 1
ALIGN_ELEMENTS = 8  # a bucket's alignment class: the size a multiple of 8 or not (16 B of f16)


class TuneError(ValueError):
    """A plan or table that cannot be read, or a shape nothing can run."""


@dataclass
class Candidate:
    params: dict[str, Any]
    bundle: str = ""  # relative to the plan directory
    facts: dict[str, Any] = field(default_factory=dict)
    pruned: str | None = None  # why it gets no GPU time


@dataclass
class Plan:
    source: str
    source_hash: str
    kernel: str
    arch: str
    defines: dict[str, str]
    shapes: list[dict[str, int]]
    bucket_by: list[str]
    candidates: list[Candidate]
    flops: str = ""  # a formula over the sizes: rank by TFLOP/s instead of bandwidth
    reference: str = ""  # a torch op in REFERENCES to time beside the candidates
    # the kernel at its defaults with its variant(...) clauses (a bundle under the plan, or ""):
    # timed beside the candidates, so a table shows what tuning gains over the hand-written rules
    baseline: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": PLAN_FORMAT,
            "format_version": FORMAT_VERSION,
            "source": self.source,
            "source_hash": self.source_hash,
            "kernel": self.kernel,
            "arch": self.arch,
            "defines": self.defines,
            "shapes": self.shapes,
            "bucket_by": self.bucket_by,
            "flops": self.flops,
            "reference": self.reference,
            "baseline": self.baseline,
            "candidates": [c.__dict__ for c in self.candidates],
        }


def source_hash(text: str) -> str:
    """What a plan (and its table) records of the kernel's source: later builds from a table
    compare it with the file's (tilec family build warns where they differ)."""
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def read_plan(directory: str | Path) -> Plan:
    file = Path(directory) / PLAN_FILE
    try:
        data = json.loads(file.read_text())
        if data.get("format") != PLAN_FORMAT or data.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"not a {PLAN_FORMAT} version {FORMAT_VERSION} file")
        candidates = [Candidate(**c) for c in data.pop("candidates")]
        del data["format"], data["format_version"]
        return Plan(**data, candidates=candidates)
    except (OSError, ValueError, TypeError, KeyError) as err:
        raise TuneError(f"{file}: cannot read a tuning plan: {err}") from None


def bucket(sizes: dict[str, int], by: list[str], peers: Sequence[dict[str, int]] = ()) -> list[str]:
    """The formulas that hold for the sizes' bucket: for each size in `by`, the power-of-two
    range it lies in (2^(k-1) < v <= 2^k) and whether it is a multiple of 8. `peers` (the other
    shapes of a plan) split a range: a peer with every other `by` size equal and this one in the
    same range and alignment class, below v, raises the range's floor to its value; one above v
    lowers its top to v. So shapes of 32, 48 and 64 rows hold (16, 32], (32, 48] and (48, 64],
    and together still cover every size their power-of-two ranges did."""
    out = []
    for name in by:
        v = sizes[name]
        top = 1 << max(v - 1, 0).bit_length()
        lo, hi = top // 2, top
        aligned = v % ALIGN_ELEMENTS == 0
        for p in peers:
            w = p.get(name, v)
            same = all(p.get(o) == sizes[o] for o in by if o != name)
            if same and top // 2 < w <= top and (w % ALIGN_ELEMENTS == 0) == aligned:
                lo = max(lo, w) if w < v else lo
                hi = v if w > v else hi
        out += [f"{name} > {lo}", f"{name} <= {hi}"] if top > 1 else [f"{name} <= 1"]
        out.append(f"{name} % {ALIGN_ELEMENTS} {'==' if v % ALIGN_ELEMENTS == 0 else '!='} 0")
    return out


@dataclass
class Timed:
    """One candidate's figure on one shape."""

    params: dict[str, Any]
    ms: float
    metric: float  # TFLOP/s, or GB/s


@dataclass
class Entry:
    """One shape: its bucket, the tensors' dtypes, the candidates ranked (fastest first)."""

    shape: dict[str, int]
    when: list[str]
    dtypes: dict[str, str]
    ranked: list[Timed]
    unit: str  # "TFLOP/s" or "GB/s"
    reference_ms: float | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # candidate -> why not timed
    baseline_ms: float | None = None  # the plan's baseline (its defaults, variant clauses on)

    @property
    def best(self) -> Timed | None:
        """The fastest candidate, where it beats the baseline (None: no candidate is faster
        than the kernel's own variant clauses, which then keep the shape: no rule)."""
        if not self.ranked or (self.baseline_ms and self.baseline_ms <= self.ranked[0].ms):
            return None
        return self.ranked[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "when": self.when,
            "dtypes": self.dtypes,
            "best": self.best.params if self.best else None,
            "unit": self.unit,
            "reference_ms": self.reference_ms,
            "ranked": [t.__dict__ for t in self.ranked],
            "skipped": self.skipped,
            "baseline_ms": self.baseline_ms,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Entry:
        ranked = [Timed(**t) for t in data["ranked"]]
        return Entry(
            data["shape"], data["when"], data["dtypes"], ranked, data["unit"],
            data.get("reference_ms"), data.get("skipped", {}), data.get("baseline_ms"),
        )  # fmt: skip


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


# Torch ops a candidate may be compared with, by name: each makes its own inputs of the sizes.
def _reference(name: str, sizes: dict[str, int], dtype: str) -> Callable[[], object]:
    torch = _torch()
    if torch is None:
        raise TuneError(f"--reference {name} needs torch with CUDA")
    t = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    f = torch.nn.functional
    if name in ("softmax", "layernorm", "rmsnorm"):
        x = torch.randn(sizes["R"], sizes["N"], device="cuda", dtype=t)
        w = torch.randn(sizes["N"], device="cuda", dtype=t)
        calls = {
            "softmax": lambda: torch.softmax(x, -1),
            "layernorm": lambda: f.layer_norm(x, (sizes["N"],), w, w, 1e-5),
            "rmsnorm": lambda: f.rms_norm(x, (sizes["N"],), w, 1e-6),
        }
        return calls[name]
    if name == "matmul":
        a = torch.randn(sizes["M"], sizes["K"], device="cuda", dtype=t)
        b = torch.randn(sizes["K"], sizes["N"], device="cuda", dtype=t)
        return lambda: a @ b
    raise TuneError(f"unknown reference {name!r} (references: softmax, layernorm, rmsnorm, matmul)")


REFERENCES = ("softmax", "layernorm", "rmsnorm", "matmul")


def _torch_args(kernel: Kernel, sizes: dict[str, int]) -> list[Any]:
    """Torch tensors (standard normal; broadcast modes expanded) and scalars for `kernel`."""
    torch = _torch()
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
    dims = shapes(kernel.manifest, sizes)
    args: list[Any] = []
    for p in user_params(kernel.manifest):
        if not isinstance(p, TensorParam):
            args.append(sizes.get(p.name, 3) if p.dtype.startswith(("i", "u")) else 1.5)
            continue
        if p.dtype not in dtypes:
            return random_args(kernel.manifest, sizes)  # the driver's arrays, eager timing
        args.append(torch_tensor(torch, p, dims[p.name], dtypes[p.dtype], "cuda"))
    return args


def torch_tensor(
    torch: Any, p: TensorParam, shape: tuple[int, ...], dtype: Any, device: str
) -> Any:
    """Tensor `p` of `shape` as torch randn data: allocated in the order `unit_mode_last` gives
    (an MN-major operand, `(M, K):(1, lda)`, is the transpose of a row-major one), broadcast
    modes expanded."""
    data = stored(p, shape)
    order = unit_mode_last(p, len(data))
    laid = torch.randn(*[data[k] for k in order], device=device, dtype=dtype)
    return laid.permute(*[order.index(m) for m in range(len(data))]).expand(*shape)


def copy_ceiling_gbs(nbytes: int = 1 << 29) -> float:
    """A device-to-device copy's GB/s, read + write counted (the rows' ceiling)."""
    driver.current_context()
    src, dst = driver.alloc(nbytes), driver.alloc(nbytes)
    try:
        ms = time_ms(lambda: driver.copy(dst, src, nbytes, 0), warmup=2, iters=7, inner=5)
    finally:
        driver.free(src)
        driver.free(dst)
    return 2 * nbytes / ms / 1e6


def gpu_identity() -> dict[str, Any]:
    return {"gpu": driver.device_name(None), "driver": driver.driver_version()}


def cache_key(
    plan: Plan, entry_when: list[str], dtypes: dict[str, str], gpu: dict[str, Any]
) -> str:
    blob = json.dumps(
        {
            "source": plan.source_hash,
            "tilec": __version__,
            "gpu": gpu,
            "dtypes": dtypes,
            "bucket": entry_when,
            "kernel": plan.kernel,
            "arch": plan.arch,
            "candidates": sorted(json.dumps(c.params, sort_keys=True) for c in plan.candidates),
            "metric": [plan.flops, plan.reference],
            "baseline": bool(plan.baseline),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _cache_file(key: str) -> Path:
    from tilec.cache import cache_dir

    return cache_dir() / "tune" / f"{key}.json"


class Timer:
    """Times zero-argument callables: in CUDA graphs where torch is there, else eagerly."""

    def __init__(self, graphs: bool) -> None:
        self.graphs = graphs

    def __call__(self, fn: Callable[[], object]) -> float:
        return time_graph_ms(fn, iters=7) if self.graphs else time_ms(fn, iters=7)


def time_shape(
    plan: Plan,
    kernels: dict[int, Kernel],
    sizes: dict[str, int],
    rounds: int,
    tick: Callable[[], None],
    baseline: Kernel | None = None,
) -> Entry:
    """Every kernel of `kernels` (candidate index -> Kernel) on `sizes`, interleaved, and the
    plan's baseline and reference beside them."""
    first = next(iter(kernels.values()))
    graphs = _torch() is not None
    args = _torch_args(first, sizes) if graphs else random_args(first.manifest, sizes)
    graphs = graphs and not any(type(a).__name__ == "DeviceArray" for a in args)
    dtypes = {p.name: p.dtype for p in first.manifest.tensors()}
    fns: dict[str, Callable[[], object]] = {}
    skipped: dict[str, str] = {}
    named = {f"c{i}": k for i, k in kernels.items()}
    for name, kernel in (named | ({"baseline": baseline} if baseline else {})).items():
        try:
            bind(kernel.manifest, tuple(args), kernel.device_symbols)
        except (TypeError, ValueError) as err:
            skipped[name] = str(err)
            continue
        fns[name] = lambda k=kernel: k(*args)
    if graphs and "baseline" in fns:  # a fast build that computes something else must not win
        wrong = check_outputs(fns, args, written(first.manifest), _torch())
        skipped.update(wrong)
        fns = {name: fn for name, fn in fns.items() if name not in wrong}
    if plan.reference:
        fns["reference"] = _reference(plan.reference, sizes, next(iter(dtypes.values())))
    for fn in fns.values():
        fn()  # load modules, compile torch's kernels, outside the timing
    driver.synchronize_context()
    timer = Timer(graphs)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].append(timer(fn))
            tick()
    ms = {name: statistics.median(s) for name, s in samples.items()}
    work, unit = _work(plan, first, sizes)
    ranked = sorted(
        (
            Timed(plan.candidates[int(n[1:])].params, t, work / t / 1e6)
            for n, t in ms.items()
            if n.startswith("c")
        ),
        key=lambda t: t.ms,
    )
    when = bucket(sizes, plan.bucket_by, plan.shapes)
    return Entry(
        sizes, when, dtypes, ranked, unit, ms.get("reference"), skipped, ms.get("baseline")
    )


def _work(plan: Plan, kernel: Kernel, sizes: dict[str, int]) -> tuple[float, str]:
    """The work the metric divides by time: FLOP (TFLOP/s, from ms: / 1e9 more) or bytes."""
    if plan.flops:
        return evaluate(plan.flops, sizes) / 1e3, "TFLOP/s"
    return float(bytes_moved(kernel.manifest, sizes)), "GB/s"


def time_plan(
    directory: str | Path, rounds: int = 5, use_cache: bool = True, progress: bool = True
) -> tuple[Plan, list[Entry], dict[str, Any]]:
    """Each shape of the plan in `directory` timed (or read from the tuning cache)."""
    root = Path(directory)
    plan = read_plan(root)
    alive = {i: c for i, c in enumerate(plan.candidates) if c.pruned is None}
    if not alive:
        raise TuneError(f"{root}: every candidate was pruned; nothing to time")
    kernels = {i: load(root / c.bundle) for i, c in alive.items()}
    baseline = load(root / plan.baseline) if plan.baseline else None
    gpu = gpu_identity()
    entries: list[Entry] = []
    per_round = len(kernels) + bool(plan.reference) + bool(baseline)
    bar = _progress(len(plan.shapes) * rounds * per_round, progress)
    dtypes = {p.name: p.dtype for p in next(iter(kernels.values())).manifest.tensors()}
    for sizes in plan.shapes:
        key = cache_key(plan, bucket(sizes, plan.bucket_by, plan.shapes), dtypes, gpu)
        cached = _cache_file(key)
        if use_cache and cached.is_file():
            entries.append(Entry.from_json(json.loads(cached.read_text())))
            bar.update(rounds * per_round)
            continue
        entry = time_shape(plan, kernels, sizes, rounds, lambda: bar.update(1), baseline)
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(entry.to_json(), indent=1))
        entries.append(entry)
    bar.close()
    return plan, entries, gpu


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, shown: bool) -> Any:
    if not shown:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc="timing", unit="run", leave=False)


def render(plan: Plan, entry: Entry, ceiling: float | None, top: int = 10) -> str:
    """A shape's ranked table: configuration, time, metric (and fraction of the copy ceiling),
    ratio to the reference (its time over the candidate's: above 1 is faster)."""

    def params(p: dict[str, Any]) -> str:
        return " ".join(f"{k}={v}" for k, v in p.items())

    shape = ",".join(f"{k}={v}" for k, v in entry.shape.items())
    lines = [f"{plan.kernel} {shape} ({' and '.join(entry.when)})"]
    head = f"  {'#':>2}  {'configuration':<40} {'µs':>9} {entry.unit:>9}"
    head += "  of copy" if ceiling and entry.unit == "GB/s" else ""
    head += "  vs ref" if entry.reference_ms else ""
    lines.append(head)
    for n, t in enumerate(entry.ranked[:top], start=1):
        row = f"  {n:>2}  {params(t.params):<40} {t.ms * 1e3:>9.1f} {t.metric:>9.1f}"
        if ceiling and entry.unit == "GB/s":
            row += f"  {t.metric / ceiling:>7.2f}"
        if entry.reference_ms:
            row += f"  {entry.reference_ms / t.ms:>6.2f}"
        lines.append(row)
    if entry.reference_ms:
        lines.append(f"      reference {plan.reference}: {entry.reference_ms * 1e3:.1f} µs")
    if entry.baseline_ms and entry.ranked:
        gain = entry.baseline_ms / entry.ranked[0].ms
        kept = "" if entry.best else ": the baseline keeps this shape (no rule)"
        lines.append(f"      baseline (defaults, variant clauses on): {entry.baseline_ms * 1e3:.1f}"
                     f" µs; the best runs {gain:.3f}x its speed{kept}")  # fmt: skip
    lines += [f"      not timed {name}: {why}" for name, why in entry.skipped.items()]
    return "\n".join(lines)


def baseline_gain(entries: list[Entry]) -> float | None:
    """The geometric mean over the shapes of the baseline's time over the table's (above 1:
    the tuned table runs faster than the kernel's own variant clauses). Where no candidate
    beats the baseline the table keeps it (Entry.best), a gain of 1 there."""
    gains = [
        e.baseline_ms / min(e.ranked[0].ms, e.baseline_ms)
        for e in entries
        if e.baseline_ms and e.ranked
    ]
    return math.exp(statistics.fmean(math.log(g) for g in gains)) if gains else None
