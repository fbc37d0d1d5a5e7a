"""tilec.torch_ops: tilec.ops as PyTorch operators, `torch.ops.tilec.*` (importing this module
registers them; it imports torch, which `import tilec` never does). docs/runtime.md, "PyTorch".

Each is a `torch.library.custom_op` that allocates its outputs (it mutates no argument) and
launches on torch's current stream. Its fake kernel (`register_fake`) gives the outputs' true
shapes, strides and dtypes from the inputs' metadata alone, so torch.compile traces through it
with no kernel compiled, no data read and no synchronisation; a kernel is loaded (or compiled
through the cache) only in the real implementation, on the first call with real tensors.
`register_autograd` wires each forward operator to its backward operators:

| operator | its backward |
| --- | --- |
| `softmax(x, dim)` | `softmax_backward(y, dy, dim)` |
| `layernorm(x, weight, bias, eps)` | `layernorm_backward(dy, x, weight, eps)`: dx, dw, db |
| `rmsnorm(x, weight, eps)` | `rmsnorm_backward(dy, x, weight, eps)`: dx, dw |
| `gemm(a, b, bias, activation, out_dtype)` | `gemm`: dA = dZ B^T, dB = A^T dZ; dbias: sum of dZ |
| `attention(q, k, v, causal, causal_alignment, scale)` | none yet: backward raises |

tilec.torch_eager runs `layernorm`, `rmsnorm` and `gemm` for tilec.nn in eager mode without the
dispatcher's round trip: autograd Functions over tilec.ops with this module's setup_context and
backward functions (each backward takes `tilec`, where its operators come from).

`gemm` runs `tilec.ops.gemm`, whose output is a new row-major M x N tensor (as the fake
kernel says). Its backward runs tilec::gemm on transposed views (dA = dZ B^T: B^T MN-major where
B is an nn.Linear weight's transpose; dB = A^T dZ: both MN-major), so no operand is copied where
M, N and K are multiples of 8.

`attention` returns (O, LSE) always: the kernels write the row log-sum-exp anyway, and a
schema with one return type traces more simply than an optional second output. It has no
backward yet (attention's backward kernels are a later issue): its registered backward raises
NotImplementedError rather than leave q, k and v without gradients silently.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

import tilec.ops as ops
from tilec.ops import backward as grads
from tilec.ops.attention import attention_scale, causal_mode, check_attention, outputs

__all__ = ["ACTIVATIONS", "FLOATS", "OPS"]

FLOATS = (torch.float16, torch.bfloat16)
WEIGHTS = (torch.float16, torch.bfloat16, torch.float32)  # a norm's weight and bias
ACTIVATIONS = (None, "relu", "gelu", "gelu_tanh")
# The operators this module registers (torch.ops.tilec.<name>).
OPS = ("softmax", "softmax_backward", "layernorm", "layernorm_backward", "rmsnorm",
       "rmsnorm_backward", "gemm", "bmm", "attention")  # fmt: skip


def _check(op: str, x: Tensor, name: str = "x") -> None:
    """What a fake kernel can check from metadata (the real one also wants a CUDA tensor)."""
    if x.dtype not in FLOATS:
        raise TypeError(f"tilec::{op}: {name} of float16 or bfloat16, got {x.dtype}")
    if x.dim() == 0:
        raise ValueError(f"tilec::{op}: {name} with at least one dimension")


def _check_grad(op: str, x: Tensor, dy: Tensor) -> None:
    _check(op, x)
    if dy.shape != x.shape or dy.dtype != x.dtype:
        raise ValueError(
            f"tilec::{op}: dy of {x.dtype}{list(x.shape)} expected, got {dy.dtype}{list(dy.shape)}"
        )


def _check_vector(op: str, x: Tensor, v: Tensor | None, name: str) -> torch.dtype:
    """A weight or bias of x's last extent: its dtype (x's when it is None)."""
    if v is None:
        return x.dtype
    if tuple(v.shape) != (x.shape[-1],):
        raise ValueError(f"tilec::{op}: {name} of shape ({x.shape[-1]},), got {tuple(v.shape)}")
    if v.dtype not in WEIGHTS:
        raise TypeError(f"tilec::{op}: {name} of float16, bfloat16 or float32, got {v.dtype}")
    return v.dtype


def _norm_grads(
    op: str, dy: Tensor, x: Tensor, weight: Tensor | None, n: int
) -> tuple[Tensor, ...]:
    """A norm's backward outputs as the real one makes them: dx, then `n` vectors (dw, db) in
    the weight's dtype (x's without one)."""
    _check_grad(op, x, dy)
    dtype = _check_vector(op, x, weight, "weight")
    vectors = [x.new_empty((x.shape[-1],), dtype=dtype) for _ in range(n)]
    return (x.new_empty(x.shape), *vectors)


def _moved_empty(x: Tensor, dim: int) -> Tensor:
    """An empty tensor laid out as tilec.ops.softmax's output: rows along `dim`, contiguous."""
    return x.new_empty(x.movedim(dim, -1).shape).movedim(-1, dim)


# softmax ---------------------------------------------------------------------------------------


@torch.library.custom_op("tilec::softmax", mutates_args=(), schema="(Tensor x, int dim) -> Tensor")
def softmax(x: Tensor, dim: int) -> Tensor:
    return ops.softmax(x, dim) if x.numel() else _moved_empty(x, dim)


@softmax.register_fake
def _(x: Tensor, dim: int) -> Tensor:
    _check("softmax", x)
    return _moved_empty(x, dim)


@torch.library.custom_op(
    "tilec::softmax_backward", mutates_args=(), schema="(Tensor y, Tensor dy, int dim) -> Tensor"
)
def softmax_backward(y: Tensor, dy: Tensor, dim: int) -> Tensor:
    return grads.softmax_backward(y, dy, dim)


@softmax_backward.register_fake
def _(y: Tensor, dy: Tensor, dim: int) -> Tensor:
    _check_grad("softmax_backward", y, dy)
    return _moved_empty(y, dim)


def _softmax_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)


def _softmax_grad(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
    (y,) = ctx.saved_tensors
    return torch.ops.tilec.softmax_backward(y, grad, ctx.dim), None


softmax.register_autograd(_softmax_grad, setup_context=_softmax_context)


# layernorm -------------------------------------------------------------------------------------


@torch.library.custom_op(
    "tilec::layernorm",
    mutates_args=(),
    schema="(Tensor x, Tensor? weight, Tensor? bias, float eps) -> Tensor",
)
def layernorm(x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    return ops.layernorm(x, weight, bias, eps)


@layernorm.register_fake
def _(x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    _check("layernorm", x)
    _check_vector("layernorm", x, weight, "weight")
    _check_vector("layernorm", x, bias, "bias")
    return x.new_empty(x.shape)


@torch.library.custom_op(
    "tilec::layernorm_backward",
    mutates_args=(),
    schema="(Tensor dy, Tensor x, Tensor? weight, float eps) -> (Tensor, Tensor, Tensor)",
)
def layernorm_backward(
    dy: Tensor, x: Tensor, weight: Tensor | None, eps: float
) -> tuple[Tensor, Tensor, Tensor]:
    return grads.layernorm_backward(x, dy, weight, eps, apart=True)  # outputs may not alias


@layernorm_backward.register_fake
def _(dy: Tensor, x: Tensor, weight: Tensor | None, eps: float) -> tuple[Tensor, ...]:
    return _norm_grads("layernorm_backward", dy, x, weight, 2)


def _layernorm_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    x, weight, bias, eps = inputs
    ctx.eps, ctx.bias_dtype = eps, None if bias is None else bias.dtype
    ctx.save_for_backward(x, weight)


def _layernorm_grad(
    ctx: Any, grad: Tensor, tilec: Any = torch.ops.tilec
) -> tuple[Tensor | None, ...]:
    x, weight = ctx.saved_tensors
    dx, dw, db = tilec.layernorm_backward(grad, x, weight, ctx.eps)
    dbias = None  # no bias; else db in its dtype (.to of db's own dtype still costs ~1 us)
    if ctx.bias_dtype is not None:
        dbias = db if db.dtype == ctx.bias_dtype else db.to(ctx.bias_dtype)
    return dx, None if weight is None else dw, dbias, None


layernorm.register_autograd(_layernorm_grad, setup_context=_layernorm_context)


# rmsnorm ---------------------------------------------------------------------------------------


@torch.library.custom_op(
    "tilec::rmsnorm", mutates_args=(), schema="(Tensor x, Tensor? weight, float? eps) -> Tensor"
)
def rmsnorm(x: Tensor, weight: Tensor | None, eps: float | None) -> Tensor:
    return ops.rmsnorm(x, weight, eps)


@rmsnorm.register_fake
def _(x: Tensor, weight: Tensor | None, eps: float | None) -> Tensor:
    _check("rmsnorm", x)
    _check_vector("rmsnorm", x, weight, "weight")
    return x.new_empty(x.shape)


@torch.library.custom_op(
    "tilec::rmsnorm_backward",
    mutates_args=(),
    schema="(Tensor dy, Tensor x, Tensor? weight, float? eps) -> (Tensor, Tensor)",
)
def rmsnorm_backward(
    dy: Tensor, x: Tensor, weight: Tensor | None, eps: float | None
) -> tuple[Tensor, Tensor]:
    return grads.rmsnorm_backward(x, dy, weight, eps)


@rmsnorm_backward.register_fake
def _(dy: Tensor, x: Tensor, weight: Tensor | None, eps: float | None) -> tuple[Tensor, ...]:
    return _norm_grads("rmsnorm_backward", dy, x, weight, 1)


def _rmsnorm_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    x, weight, eps = inputs
    ctx.eps = eps
    ctx.save_for_backward(x, weight)


def _rmsnorm_grad(
    ctx: Any, grad: Tensor, tilec: Any = torch.ops.tilec
) -> tuple[Tensor | None, ...]:
    x, weight = ctx.saved_tensors
    dx, dw = tilec.rmsnorm_backward(grad, x, weight, ctx.eps)
    return dx, None if weight is None else dw, None


rmsnorm.register_autograd(_rmsnorm_grad, setup_context=_rmsnorm_context)


# gemm ------------------------------------------------------------------------------------------


def _gemm_shape(
    a: Tensor, b: Tensor, bias: Tensor | None, activation: str | None, out_dtype: Any = None
) -> None:
    _check("gemm", a, "a")
    _check("gemm", b, "b")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"tilec::gemm: a (M, K) and b (K, N), got {list(a.shape)} and "
                         f"{list(b.shape)}")  # fmt: skip
    if a.dtype != b.dtype:
        raise TypeError(f"tilec::gemm: a and b of one dtype, got {a.dtype} and {b.dtype}")
    if bias is not None and (tuple(bias.shape) != (b.shape[1],) or bias.dtype != a.dtype):
        raise ValueError(f"tilec::gemm: a bias of {a.dtype}[{b.shape[1]}], got "
                         f"{bias.dtype}{list(bias.shape)}")  # fmt: skip
    if activation not in ACTIVATIONS:
        raise ValueError(f"tilec::gemm: activation one of {ACTIVATIONS}, got {activation!r}")
    if out_dtype not in (None, *FLOATS, torch.float32):
        raise TypeError(f"tilec::gemm: out_dtype float16, bfloat16 or float32, got {out_dtype}")


@torch.library.custom_op(
    "tilec::gemm",
    mutates_args=(),
    schema="(Tensor a, Tensor b, Tensor? bias=None, str? activation=None, "
    "ScalarType? out_dtype=None) -> Tensor",
)
def gemm(
    a: Tensor,
    b: Tensor,
    bias: Tensor | None = None,
    activation: str | None = None,
    out_dtype: torch.dtype | None = None,
) -> Tensor:
    return ops.gemm(a, b, bias=bias, activation=activation, out_dtype=out_dtype)


@gemm.register_fake
def _(
    a: Tensor,
    b: Tensor,
    bias: Tensor | None = None,
    activation: str | None = None,
    out_dtype: torch.dtype | None = None,
) -> Tensor:
    _gemm_shape(a, b, bias, activation, out_dtype)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype or a.dtype)


def _gemm_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    a, b, bias, activation, _ = inputs
    ctx.activation = activation
    ctx.save_for_backward(a, b, bias, output if activation == "relu" else None)


def _gemm_grad(ctx: Any, grad: Tensor, tilec: Any = torch.ops.tilec) -> tuple[Tensor | None, ...]:
    """dZ = dY * act'(Z) (ReLU's from the output; GELU's from Z computed again), then dA = dZ
    B^T and dB = A^T dZ through tilec::gemm, dbias = dZ summed over the rows (in f32).
    `tilec`: where the operators come from (tilec.torch_eager's backward passes its own)."""
    a, b, bias, y = ctx.saved_tensors
    dz = grad
    if ctx.activation == "relu":
        dz = torch.ops.aten.threshold_backward(grad, y, 0)
    elif ctx.activation is not None:
        z = tilec.gemm(a, b, bias, None, grad.dtype)
        approximate = "tanh" if ctx.activation == "gelu_tanh" else "none"
        dz = torch.ops.aten.gelu_backward(grad, z, approximate=approximate)
    dz = dz.to(a.dtype)
    need_a, need_b, need_bias = ctx.needs_input_grad[:3]
    da = tilec.gemm(dz, b.t()) if need_a else None
    db = tilec.gemm(a.t(), dz) if need_b else None
    dbias = None
    if need_bias and bias is not None:
        dbias = dz.sum(0, dtype=torch.float32).to(bias.dtype)
    return da, db, dbias, None, None


gemm.register_autograd(_gemm_grad, setup_context=_gemm_context)


@torch.library.custom_op(
    "tilec::bmm",
    mutates_args=(),
    schema="(Tensor a, Tensor b, ScalarType? out_dtype=None) -> Tensor",
)
def bmm(a: Tensor, b: Tensor, out_dtype: torch.dtype | None = None) -> Tensor:
    return ops.bmm(a, b, out_dtype=out_dtype)


@bmm.register_fake
def _(a: Tensor, b: Tensor, out_dtype: torch.dtype | None = None) -> Tensor:
    _check("bmm", a, "a")
    _check("bmm", b, "b")
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"tilec::bmm: a (L, M, K) and b (L, K, N), got {list(a.shape)} and "
                         f"{list(b.shape)}")  # fmt: skip
    if a.dtype != b.dtype:
        raise TypeError(f"tilec::bmm: a and b of one dtype, got {a.dtype} and {b.dtype}")
    if out_dtype not in (None, *FLOATS, torch.float32):
        raise TypeError(f"tilec::bmm: out_dtype float16, bfloat16 or float32, got {out_dtype}")
    return a.new_empty((a.shape[0], a.shape[1], b.shape[2]), dtype=out_dtype or a.dtype)


def _bmm_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    ctx.save_for_backward(inputs[0], inputs[1])


def _bmm_grad(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
    """dA = dY B^T and dB = A^T dY, each batch, through tilec::bmm (in the inputs' dtype)."""
    a, b = ctx.saved_tensors
    dy = grad.to(a.dtype)
    need_a, need_b = ctx.needs_input_grad[:2]
    da = torch.ops.tilec.bmm(dy, b.transpose(1, 2)) if need_a else None
    db = torch.ops.tilec.bmm(a.transpose(1, 2), dy) if need_b else None
    return da, db, None


bmm.register_autograd(_bmm_grad, setup_context=_bmm_context)


# attention -------------------------------------------------------------------------------------


@torch.library.custom_op(
    "tilec::attention",
    mutates_args=(),
    schema="(Tensor q, Tensor k, Tensor v, bool causal=False, "
    'str causal_alignment="top_left", float? scale=None) -> (Tensor, Tensor)',
)
def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    causal: bool = False,
    causal_alignment: str = "top_left",
    scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    return ops.attention(
        q, k, v, causal=causal, causal_alignment=causal_alignment, scale=scale, return_lse=True
    )


@attention.register_fake
def _(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    causal: bool = False,
    causal_alignment: str = "top_left",
    scale: float | None = None,
) -> tuple[Tensor, Tensor]:
    check_attention(q, k, v)
    causal_mode(causal, causal_alignment)
    attention_scale(scale, q.shape[3])
    return outputs(q)


def _attention_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    pass


def _attention_grad(ctx: Any, grad_o: Tensor, grad_lse: Tensor) -> None:
    raise NotImplementedError(
        "tilec::attention has no backward yet (its backward kernels are a later issue): run "
        "it under torch.no_grad() or on tensors that do not require grad, or train with "
        "torch.nn.functional.scaled_dot_product_attention"
    )


attention.register_autograd(_attention_grad, setup_context=_attention_context)
