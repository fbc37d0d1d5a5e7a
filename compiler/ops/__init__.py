"""tilec.ops: operations on torch tensors, each backed by a kernel family (docs/runtime.md,
"tilec.ops"): `softmax`, `layernorm`, `rmsnorm`, `gemm`, `bmm` (tilec/ops/gemm.py) and
`attention` and `attention_varlen` (tilec/ops/attention.py).

Each call reads only shapes, dtypes and devices (never the data: no host synchronisation),
allocates its output on the input's device and launches on torch's current stream; `stream=`
(a torch stream, or a CUstream handle as an int or an object with `cuda_stream`/`ptr`/
`handle`) makes that stream torch's current one for the call, so its allocations, copies and
launches all go there. Their gradients are tilec.ops.backward's. The build a shape runs is the
family's choice, made once per argument signature; families come from
$TILEC_FAMILIES/<op> (default `build/families/<op>` in the checkout, written by `tilec family
build --op <op>`), and where a family or one of its builds is missing and MLIR is installed, the
build compiles on first use through the compile cache.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tilec.ops.planned import SCALAR, PlannedCalls, Prepare, constant
from tilec.runtime.family import (
    FAMILY_FILE,
    Family,
    FamilySpec,
    default_compiler,
    open_family,
    repository_root,
)

__all__ = ["attention", "attention_varlen", "bmm", "family", "gemm", "layernorm", "on_stream",
           "op_specs", "rmsnorm", "softmax"]  # fmt: skip

_FAMILIES: dict[str, Family] = {}
_DEVICES: dict[int, tuple[str, int]] = {}  # device index -> its arch ("sm_90") and SM count
_CONSTANTS: dict[tuple[Any, ...], Any] = {}  # ones and zeros for absent weights and biases
PLANNED = PlannedCalls()  # softmax and the norms' calls, planned (tilec/ops/planned.py)


def families_dir() -> Path:
    env = os.environ.get("TILEC_FAMILIES")
    return Path(env) if env else repository_root() / "build" / "families"


def op_specs() -> dict[str, Callable[[], FamilySpec]]:
    """Every family's spec by name: the operations' (tilec/ops/specs.py), their backward
    kernels' (tilec/ops/backward_specs.py), the GEMMs' (tilec/ops/gemm_specs.py) and
    attention's (tilec/ops/attention_specs.py)."""
    from tilec.ops.attention_specs import ATTENTION_SPECS
    from tilec.ops.backward_specs import BACKWARD_SPECS
    from tilec.ops.gemm_specs import GEMM_SPECS
    from tilec.ops.specs import SPECS

    return {**SPECS, **BACKWARD_SPECS, **GEMM_SPECS, **ATTENTION_SPECS}


TUNING = Path(__file__).parent / "tuning"  # tables `tilec tune` wrote: <op>.<what>.json


def tuned_spec(name: str) -> FamilySpec:
    """Operation `name`'s spec with its shipped tuning tables (tilec/ops/tuning/<name>.*.json,
    `tilec tune`'s results) ahead of its own rules: what `tilec family build --op` builds and
    what a family compiled on demand dispatches by."""
    from tilec.runtime.tuning_table import read_table, tuned

    return tuned(op_specs()[name](), [read_table(p) for p in shipped_tables(name)])


def shipped_tables(name: str) -> list[Path]:
    return sorted(TUNING.glob(f"{name}.*.json"))


def family(name: str) -> Family:
    """The family behind operation `name` (loaded once)."""
    if name not in _FAMILIES:
        specs = op_specs()
        if name not in specs:
            raise ValueError(f"tilec.ops has no family {name!r} (families: {', '.join(specs)})")
        directory = families_dir() / name
        if (directory / FAMILY_FILE).is_file():
            _FAMILIES[name] = open_family(directory)
        else:
            _FAMILIES[name] = Family(tuned_spec(name), None, default_compiler())
    return _FAMILIES[name]


def _torch_stream(stream: Any) -> Any:
    """A context making `stream` torch's current stream (None: the current one stays)."""
    if stream is None:
        return contextlib.nullcontext()
    import torch

    if not isinstance(stream, torch.cuda.Stream):
        from tilec.runtime.streams import stream_handle

        stream = torch.cuda.ExternalStream(stream_handle(stream))
    return torch.cuda.stream(stream)


def on_stream(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` taking `stream=` too: that stream is torch's current one during the call."""

    @functools.wraps(fn)
    def run(*args: Any, stream: Any = None, **kwargs: Any) -> Any:
        if stream is None:
            return fn(*args, **kwargs)
        with _torch_stream(stream):
            return fn(*args, **kwargs)

    sig = inspect.signature(fn)
    extra = inspect.Parameter("stream", inspect.Parameter.KEYWORD_ONLY, default=None)
    run.__signature__ = sig.replace(parameters=[*sig.parameters.values(), extra])  # type: ignore[attr-defined]
    return run


def device_facts(device: Any) -> tuple[str, int]:
    """A torch device's arch ("sm_90" etc.) and SM count, read from torch once per device."""
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _DEVICES:
        props = torch.cuda.get_device_properties(index)
        _DEVICES[index] = (f"sm_{props.major}{props.minor}", props.multi_processor_count)
    return _DEVICES[index]


def _check(op: str, x: Any) -> Any:
    """torch, after checking that `x` is a CUDA tensor of float16 or bfloat16."""
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"tilec.ops.{op}: expected a torch.Tensor, got {type(x).__name__}")
    if not x.is_cuda:
        raise TypeError(f"tilec.ops.{op}: the tensor is on {x.device}; a CUDA tensor is needed")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"tilec.ops.{op}: float16 or bfloat16 tensors, got {x.dtype}")
    if x.dim() == 0:
        raise ValueError(f"tilec.ops.{op}: a tensor with at least one dimension")
    return torch


def _rows(x: Any) -> Any:
    """x as contiguous rows of its last dimension, 16-byte aligned (copied when it is not); x
    itself where it is all that already (each view costs a few us of host time)."""
    rows = x if x.dim() == 2 else x.reshape(-1, x.shape[-1])
    if not rows.is_contiguous() or rows.data_ptr() % 16:
        rows = rows.contiguous() if not rows.is_contiguous() else rows.clone()
    return rows


def _empty(torch: Any, rows: Any) -> Any:
    """A new contiguous tensor of `rows`' shape, dtype and device (empty_like parses fewer
    arguments than new_empty(shape): ~1 us less a call)."""
    return torch.empty_like(rows, memory_format=torch.contiguous_format)


def _vector(x: Any, value: Any, fill: float, what: str, op: str) -> Any:
    """A weight or bias of x's last extent and dtype: `value`, or `fill` (cached) when None."""
    n = x.shape[-1]
    if value is None:
        key = (fill, n, x.dtype, x.device)
        if key not in _CONSTANTS:
            import torch

            _CONSTANTS[key] = torch.full((n,), fill, dtype=x.dtype, device=x.device)
        return _CONSTANTS[key]
    if tuple(value.shape) != (n,):
        raise ValueError(
            f"tilec.ops.{op}: {what} of shape ({n},) expected, got {tuple(value.shape)}"
        )
    if value.device != x.device:
        raise ValueError(f"tilec.ops.{op}: {what} is on {value.device}, the input on {x.device}")
    return _kernel_vector(value, x.dtype)


def _kernel_vector(value: Any, dtype: Any) -> Any:
    """A checked weight or bias as the kernels read it: of `dtype`, unit stride, aligned."""
    value = value if value.dtype == dtype else value.to(dtype)
    return value if value.stride(0) == 1 and value.data_ptr() % 16 == 0 else value.clone()


def _read(given: Any, read: Any) -> Prepare:
    """How a planned call gets what the kernels read (`read`) from its input `given`: as it is
    (None), a constant for an absent vector, or a copy made as the checked path made it (a
    row-major copy of x, a weight converted or moved to an aligned unit stride)."""
    if given is None:
        return constant(read)
    if read.data_ptr() == given.data_ptr():
        return None  # x's rows or a vector read where they lie (a view, or the input itself)
    if read.dim() == 1:
        return functools.partial(_kernel_vector, dtype=read.dtype)
    return _rows


def _eps(torch: Any, x: Any, eps: Any) -> float:
    """A norm's eps as the kernels take it: the given number, or (None) x's dtype's epsilon,
    as torch's rms_norm defaults it."""
    return float(torch.finfo(x.dtype).eps if eps is None else eps)


def _like(torch: Any, tensors: tuple[Any, ...]) -> tuple[Any, ...]:
    """A planned row op's output: a new contiguous tensor of its first input's shape."""
    return (_empty(torch, tensors[0]),)


def _plan_rows(
    op: str, inputs: tuple[Any, ...], scalars: tuple[Any, ...], reads: tuple[Any, ...],
    args: tuple[Any, ...],
) -> None:  # fmt: skip
    """Keeps the launch of row family `op` on `args` (the tensors the kernels read, then the
    output, then float scalars) for later calls with the signature of `inputs` and `scalars`:
    `reads` are what the kernels read of each input (x's rows, the vectors before expanding)."""
    import torch

    slots = tuple(SCALAR if isinstance(a, float) else i for i, a in enumerate(args))
    step = (
        family(op).launch(*args),
        slots,
        tuple(a if isinstance(a, float) else None for a in args),
    )
    prepare = tuple(_read(i, r) for i, r in zip(inputs, reads, strict=True))
    PLANNED.remember(op, inputs, scalars, (step,), functools.partial(_like, torch), prepare)


@on_stream
def softmax(x: Any, dim: int = -1) -> Any:
    """softmax(x) along `dim` (torch.softmax's values), in x's dtype, f32 inside."""
    found = PLANNED.run("softmax", (x,), (dim,))
    if found is not None:  # a signature planned before: checked then
        return found
    torch = _check("softmax", x)
    moved = x.movedim(dim, -1) if dim not in (-1, x.dim() - 1) else x
    if moved.numel() == 0:
        return x.new_empty(x.shape)
    rows = _rows(moved)
    out = _empty(torch, rows)
    family("softmax")(rows, out)
    if moved is x:  # rows along the last dim: later calls as planned
        _plan_rows("softmax", (x,), (dim,), (rows,), (rows, out))
    out = out if rows is moved else out.view(moved.shape)
    return out.movedim(-1, dim) if moved is not x else out


def _norm(op: str, x: Any, vectors: dict[str, Any], eps: Any) -> Any:
    """A norm's output (`op`: layernorm or rmsnorm) over x's last dimension, its weight (and
    bias) `vectors` by name (None: ones, zeros), eps a Python number (None: the dtype's
    epsilon), checked; later calls of this signature are planned."""
    torch = _check(op, x)
    if x.numel() == 0:
        return x.new_empty(x.shape)
    rows = _rows(x)
    fills = {"weight": 1.0, "bias": 0.0}
    used = [_vector(x, v, fills[name], name, op) for name, v in vectors.items()]
    out = _empty(torch, rows)
    r, n = rows.shape
    args = (rows, *(v.expand(r, n) for v in used), out, _eps(torch, x, eps))
    family(op)(*args)
    _plan_rows(op, (x, *vectors.values()), (eps,), (rows, *used), args)
    return out if rows is x else out.view(x.shape)


@on_stream
def layernorm(x: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """LayerNorm over the last dimension (torch.nn.functional.layer_norm with normalized_shape
    = (x.shape[-1],)): (x - mean) / sqrt(var + eps) * weight + bias; weight and bias optional."""
    found = PLANNED.run("layernorm", (x, weight, bias), (eps,))
    if found is not None:  # a signature planned before: checked then
        return found
    return _norm("layernorm", x, {"weight": weight, "bias": bias}, eps)


@on_stream
def rmsnorm(x: Any, weight: Any = None, eps: float | None = None) -> Any:
    """RMSNorm over the last dimension (torch.nn.functional.rms_norm): x / sqrt(mean(x^2) + eps)
    * weight; eps defaults to the dtype's epsilon, as torch's does."""
    found = PLANNED.run("rmsnorm", (x, weight), (eps,))
    if found is not None:  # a signature planned before: checked then
        return found
    return _norm("rmsnorm", x, {"weight": weight}, eps)


# After the helpers it imports from this module.
from tilec.ops.attention import attention, attention_varlen  # noqa: E402
from tilec.ops.gemm import bmm, gemm  # noqa: E402
