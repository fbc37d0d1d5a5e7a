"""tilec.ops' backward operations: the gradients of `softmax`, `layernorm` and `rmsnorm`, each
backed by a kernel family (tilec/ops/backward_specs.py) as the forward operations are;
`tilec.torch_ops` wires them into torch's autograd (docs/runtime.md, "PyTorch").

Like the forward calls they read shapes, dtypes and devices only (no host synchronisation),
allocate their outputs on the input's device and launch on torch's current stream (`stream=`
makes a stream that, as for the forward calls). The norms' backward recomputes each row's
statistics from x (the forward keeps none) and leaves one row of partial weight (and bias)
gradients per block in an f32 buffer, which `colsum` adds up into the weight's dtype.
"""

from __future__ import annotations

from typing import Any

from tilec.ops import _check, _empty, _rows, _vector, family, on_stream
from tilec.ops.backward_specs import partial_rows

__all__ = ["layernorm_backward", "rmsnorm_backward", "softmax_backward"]

_SMS: dict[int, int] = {}  # device index -> SM count


def _same(op: str, x: Any, dy: Any, name: str = "dy") -> None:
    """dy must be a tensor of x's shape, dtype and device (the output's gradient)."""
    _check(op, dy)
    if dy.shape != x.shape:
        shapes = f"{tuple(x.shape)} expected, got {tuple(dy.shape)}"
        raise ValueError(f"tilec.ops.{op}: {name} of shape {shapes}")
    if dy.dtype != x.dtype or dy.device != x.device:
        theirs = f"{dy.dtype} on {dy.device}, the input {x.dtype} on {x.device}"
        raise ValueError(f"tilec.ops.{op}: {name} is {theirs}")


def _num_sms(device: Any) -> int:
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


@on_stream
def softmax_backward(y: Any, dy: Any, dim: int = -1) -> Any:
    """The gradient of softmax's input along `dim` from its output `y` and that output's
    gradient `dy`: y * (dy - sum(y * dy, dim)), in y's dtype, f32 inside."""
    torch = _check("softmax_backward", y)
    _same("softmax_backward", y, dy)
    last = dim in (-1, y.dim() - 1)
    moved, moved_dy = (y, dy) if last else (y.movedim(dim, -1), dy.movedim(dim, -1))
    if y.numel() == 0:
        return y.new_empty(moved.shape).movedim(-1, dim)
    rows = _rows(moved)
    dx = _empty(torch, rows)
    family("softmax_bwd")(rows, _rows(moved_dy), dx)
    dx = dx if rows is moved else dx.view(moved.shape)
    return dx if last else dx.movedim(-1, dim)


def _sums(partial: Any, dtype: Any) -> Any:
    """The column sums of the f32 partial sums `partial` (G x N), in `dtype`."""
    out = partial.new_empty((partial.shape[1],), dtype=dtype)
    family("colsum")(partial, out.view(1, -1))
    return out


def _norm_backward(
    op: str, x: Any, dy: Any, weight: Any, eps: float, bias: bool
) -> tuple[Any, ...]:
    """dx and the partial sums' totals (dw, and db with `bias`) of a norm's backward."""
    torch = _check(f"{op}_backward", x)
    _same(f"{op}_backward", x, dy)
    n = x.shape[-1]
    wdtype = weight.dtype if weight is not None else x.dtype
    if wdtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(
            f"tilec.ops.{op}_backward: a weight of float16, bfloat16 or float32, got {wdtype}"
        )
    if x.numel() == 0:  # no rows (dw = db = 0), or rows of nothing
        zeros = [torch.zeros(n, dtype=wdtype, device=x.device) for _ in range(1 + bias)]
        return (x.new_empty(x.shape), *zeros)
    rows, grads = _rows(x), _rows(dy)
    r = rows.shape[0]
    w = _vector(x, weight, 1.0, "weight", f"{op}_backward")
    g = partial_rows(f"{op}_bwd", n, r, _num_sms(x.device))
    partials = [rows.new_empty((g, n), dtype=torch.float32) for _ in range(1 + bias)]
    dx = _empty(torch, rows)
    family(f"{op}_bwd")(rows, w.expand(r, n), grads, dx, *partials, float(eps))
    dx = dx if rows is x else dx.view(x.shape)
    return (dx, *[_sums(p, wdtype) for p in partials])


@on_stream
def layernorm_backward(
    x: Any, dy: Any, weight: Any = None, eps: float = 1e-5
) -> tuple[Any, Any, Any]:
    """The gradients of `layernorm(x, weight, bias, eps)` from its output's gradient `dy`:
    (dx, dw, db); dx in x's dtype, dw and db (the column sums of dy * xhat and of dy) in the
    weight's dtype (x's when there is none). The bias does not enter them."""
    dx, dw, db = _norm_backward("layernorm", x, dy, weight, eps, True)
    return dx, dw, db


@on_stream
def rmsnorm_backward(
    x: Any, dy: Any, weight: Any = None, eps: float | None = None
) -> tuple[Any, Any]:
    """The gradients of `rmsnorm(x, weight, eps)` from its output's gradient `dy`: (dx, dw),
    dx in x's dtype, dw in the weight's (x's when there is none); eps defaults to the dtype's
    epsilon, as the forward's does."""
    torch = _check("rmsnorm_backward", x)
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    dx, dw = _norm_backward("rmsnorm", x, dy, weight, eps, False)
    return dx, dw
