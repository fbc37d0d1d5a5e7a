"""tilec.torch_eager: tilec.nn's eager path, `torch.autograd.Function`s over tilec.ops that skip
the dispatcher's round trip through the `torch.ops.tilec.*` operators (docs/runtime.md,
"PyTorch": the eager path).

A call through a custom operator goes C++ dispatcher -> its Python autograd kernel ->
autograd.Function -> redispatch below autograd -> its Python kernel -> tilec.ops: on a small
CPU that is ~30 us a forward and ~70 us a forward and backward beyond tilec.ops' own work,
which at 16384 x 4096 is more than the GPU's. `layernorm`, `rmsnorm` and `gemm` here take the
operators' arguments and run a Function calling tilec.ops directly where nothing but eager
autograd sees the call (`eager`): CUDA tensors of torch.Tensor or nn.Parameter, no
torch.compile or jit tracing, no torch function or dispatch mode (FakeTensorMode,
FlopCounterMode, selective checkpointing), no functorch transform. Anything else goes to the
operator, so compile, export, opcheck, modes and meta tensors see `torch.ops.tilec.*` as they
always did. The Functions keep what the operators' autograd keeps (tilec.torch_ops'
setup_context functions) and compute the same gradients (its backward functions, handed
tilec.ops' calls); a backward with create_graph=True calls the backward operators, whose own
backward refuses a second derivative as the operators' does.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

import tilec.ops as ops
import tilec.torch_ops as torch_ops
from tilec.ops import backward as grads

__all__ = ["eager", "gemm", "layernorm", "rmsnorm"]

_PLAIN = (torch.Tensor, torch.nn.Parameter)
_C = torch._C


def _on_device(t: Tensor) -> bool:
    """Whether the kernels could take `t`'s memory (the CPU tests stand CPU tensors in)."""
    return t.is_cuda


def eager(*tensors: Tensor | None) -> bool:
    """Whether a call on `tensors` (None: an absent optional one) may skip the operator: CUDA
    tensors of plain types, and nothing tracing or intercepting torch's calls."""
    if torch.compiler.is_compiling() or _C._get_tracing_state() is not None:
        return False
    if _C._len_torch_dispatch_stack() or _C._is_torch_function_mode_enabled():
        return False
    if _C._are_functorch_transforms_active():
        return False
    return all(t is None or (type(t) in _PLAIN and _on_device(t)) for t in tensors)


class _Direct:
    """The operators a backward function calls (torch_ops' `_*_grad(ctx, grad, tilec)`), by
    their schemas' names and argument orders, as tilec.ops' calls."""

    @staticmethod
    def layernorm_backward(dy: Tensor, x: Tensor, weight: Tensor | None, eps: float) -> Any:
        return grads.layernorm_backward(x, dy, weight, eps)

    @staticmethod
    def rmsnorm_backward(dy: Tensor, x: Tensor, weight: Tensor | None, eps: float | None) -> Any:
        return grads.rmsnorm_backward(x, dy, weight, eps)

    @staticmethod
    def gemm(
        a: Tensor,
        b: Tensor,
        bias: Tensor | None = None,
        activation: str | None = None,
        out_dtype: torch.dtype | None = None,
    ) -> Tensor:
        return ops.gemm(a, b, bias=bias, activation=activation, out_dtype=out_dtype)


def _operators(*tensors: Tensor | None) -> Any:
    """Where a Function's backward takes its operators: tilec.ops' calls, or the `torch.ops.tilec`
    ones under create_graph=True (their backward then refuses a second derivative) or where
    something intercepts torch's calls."""
    return _Direct if not torch.is_grad_enabled() and eager(*tensors) else torch.ops.tilec


# forward(ctx, ...) rather than forward(...) with setup_context: for the latter, Function.apply
# binds the arguments with inspect.signature at every call (~30 us on a small CPU).


def _function(call: Any, context: Any, grad: Any) -> type[torch.autograd.Function]:
    """A Function computing `call` (tilec.ops' call on the operator's arguments), keeping what
    the operator's setup_context `context` keeps and differentiating as its backward `grad`
    does, with the operators `_operators` picks."""

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *args: Any) -> Tensor:
            y = call(*args)
            context(ctx, args, y)
            return y

        @staticmethod
        def backward(ctx: Any, dy: Tensor) -> tuple[Tensor | None, ...]:
            return grad(ctx, dy, _operators(dy))

    return Function


_LayerNorm = _function(ops.layernorm, torch_ops._layernorm_context, torch_ops._layernorm_grad)
_RMSNorm = _function(ops.rmsnorm, torch_ops._rmsnorm_context, torch_ops._rmsnorm_grad)
_Gemm = _function(_Direct.gemm, torch_ops._gemm_context, torch_ops._gemm_grad)


def layernorm(x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    """torch.ops.tilec.layernorm(x, weight, bias, eps), eagerly where `eager` allows."""
    if eager(x, weight, bias):
        return _LayerNorm.apply(x, weight, bias, eps)
    return torch.ops.tilec.layernorm(x, weight, bias, eps)


def rmsnorm(x: Tensor, weight: Tensor | None, eps: float | None) -> Tensor:
    """torch.ops.tilec.rmsnorm(x, weight, eps), eagerly where `eager` allows."""
    if eager(x, weight):
        return _RMSNorm.apply(x, weight, eps)
    return torch.ops.tilec.rmsnorm(x, weight, eps)


def gemm(
    a: Tensor,
    b: Tensor,
    bias: Tensor | None = None,
    activation: str | None = None,
    out_dtype: torch.dtype | None = None,
) -> Tensor:
    """torch.ops.tilec.gemm(a, b, bias, activation, out_dtype), eagerly where `eager` allows."""
    if eager(a, b, bias):
        return _Gemm.apply(a, b, bias, activation, out_dtype)
    return torch.ops.tilec.gemm(a, b, bias, activation, out_dtype)
