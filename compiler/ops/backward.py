"""tilec.ops' backward operations: the gradients of `softmax`, `layernorm` and `rmsnorm`, each
backed by a kernel family (tilec/ops/backward_specs.py) as the forward operations are;
`tilec.torch_ops` wires them into torch's autograd (docs/runtime.md, "PyTorch").

Like the forward calls they read shapes, dtypes and devices only (no host synchronisation),
allocate their outputs on the input's device and launch on torch's current stream (`stream=`
makes a stream that, as for the forward calls). The norms' backward recomputes each row's
statistics from x (the forward keeps none) and leaves one row of partial weight (and bias)
gradients per block in an f32 buffer, which `colsum` adds up into the weight's dtype: one
launch for dw and db together (the batches of one (2, G, N) buffer), two in all a backward.
"""

from __future__ import annotations

import functools
from typing import Any

from tilec.ops import _check, _empty, _eps, _read, _rows, _vector, device_facts, family, on_stream
from tilec.ops.backward_specs import partial_rows
from tilec.ops.planned import SCALAR, PlannedCalls

__all__ = ["layernorm_backward", "rmsnorm_backward", "softmax_backward"]

PLANNED = PlannedCalls()  # the norms' backward calls, planned (tilec/ops/planned.py)


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
    return device_facts(device)[1]


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


def _sums(partials: Any, dtype: Any) -> tuple[Any, ...]:
    """The column sums of each batch of the f32 partial sums `partials` (B x G x N), in `dtype`,
    each a tensor of its own (a colsum launch each)."""
    out = []
    for b in range(len(partials)):
        out.append(partials.new_empty((1, partials.shape[2]), dtype=dtype))
        family("colsum")(partials[b : b + 1], out[-1])
    return tuple(s[0] for s in out)


def _partials(rows: Any, batches: int, g: int, n: int) -> Any:
    """An f32 (batches, g, n) buffer for a norm backward's partial sums (dw's, and db's): each
    batch contiguous and 16-byte aligned (the kernels take them as tensors of their own), so
    batches lie g * n elements apart, rounded up to 4, where g * n is not a multiple of 4."""
    import torch

    apart = -(-g * n // 4) * 4
    if batches == 1 or apart == g * n:
        return rows.new_empty((batches, g, n), dtype=torch.float32)
    flat = rows.new_empty((batches * apart,), dtype=torch.float32)
    return flat.as_strided((batches, g, n), (apart, n, 1))


def _news(
    torch: Any, batches: int, g: int, n: int, dtype: Any, tensors: tuple[Any, ...]
) -> tuple[Any, ...]:
    """A norm backward's new tensors for x = tensors[0]: dx (contiguous, x's shape), the
    (batches, g, n) partial sums, the pointer of each batch of them (an int: no view made),
    and their column sums (batches x n in `dtype`)."""
    partials = _partials(tensors[0], batches, g, n)
    sums = partials.new_empty((batches, n), dtype=dtype)
    base, apart = partials.data_ptr(), partials.stride(0) * 4  # f32
    return (_empty(torch, tensors[0]), partials, *range(base, base + batches * apart, apart), sums)


def _grads(news: tuple[Any, ...]) -> tuple[Any, ...]:
    """dx and the column sums' rows (dw, and db), of `_news`' tensors."""
    return (news[0], *news[-1].unbind(0))


def _norm_backward(
    op: str, x: Any, dy: Any, weight: Any, eps: Any, bias: bool, apart: bool = False
) -> tuple[Any, ...]:
    """dx and the partial sums' totals (dw, and db with `bias`: views of one tensor, or with
    `apart` tensors of their own) of a norm's backward; eps a Python number (None: the dtype's
    epsilon). As planned where a call of this signature was made before (`apart` never is)."""
    found = None if apart else PLANNED.run(op, (x, dy, weight), (eps,))
    if found is not None:
        return found
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
    make = functools.partial(_news, torch, 1 + bias, g, n, wdtype)
    news = make((x,))
    dx = news[0] if rows is x else news[0].view(rows.shape)
    e = _eps(torch, x, eps)
    args = (rows, w.expand(r, n), grads, dx, *news[1].unbind(0), e)
    family(f"{op}_bwd")(*args)
    if apart:
        return (news[0], *_sums(news[1], wdtype))
    family("colsum")(news[1], news[-1])
    # a planned call's pointers: x, dy and w as read, then `_news`' (dx 3, the partials 4, their
    # batches from 5, the sums after them)
    batches = tuple(range(5, 6 + bias))
    steps = (
        (
            family(f"{op}_bwd").launch(*args),
            (0, 2, 1, 3, *batches, SCALAR),
            (*[None] * (len(args) - 1), e),
        ),
        (family("colsum").launch(news[1], news[-1]), (4, 6 + bias), ()),
    )
    prepare = (_read(x, rows), _read(dy, grads), _read(weight, w))
    PLANNED.remember(op, (x, dy, weight), (eps,), steps, make, prepare, _grads)
    return _grads(news)


@on_stream
def layernorm_backward(
    x: Any, dy: Any, weight: Any = None, eps: float = 1e-5, *, apart: bool = False
) -> tuple[Any, Any, Any]:
    """The gradients of `layernorm(x, weight, bias, eps)` from its output's gradient `dy`:
    (dx, dw, db); dx in x's dtype, dw and db (the column sums of dy * xhat and of dy) in the
    weight's dtype (x's when there is none). The bias does not enter them. dw and db are the
    two rows of one tensor (summed by one launch); `apart=True` makes them tensors of their own
    (a launch each), as a torch custom operator's outputs must be."""
    dx, dw, db = _norm_backward("layernorm", x, dy, weight, eps, True, apart)
    return dx, dw, db


@on_stream
def rmsnorm_backward(
    x: Any, dy: Any, weight: Any = None, eps: float | None = None
) -> tuple[Any, Any]:
    """The gradients of `rmsnorm(x, weight, eps)` from its output's gradient `dy`: (dx, dw),
    dx in x's dtype, dw in the weight's (x's when there is none); eps defaults to the dtype's
    epsilon, as the forward's does."""
    dx, dw = _norm_backward("rmsnorm", x, dy, weight, eps, False)
    return dx, dw
