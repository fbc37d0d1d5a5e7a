"""tilec.nn: drop-ins for torch.nn.Linear, LayerNorm and RMSNorm whose forward and backward run
tilec's kernels through `torch.ops.tilec.*` (tilec.torch_ops; docs/runtime.md, "PyTorch"), or
in eager mode through tilec.torch_eager's autograd Functions, which call tilec.ops directly.

Each subclasses torch's module, so parameters, their initialisation, `state_dict` keys and
`repr` are torch's: `tilec.nn.LayerNorm(d).load_state_dict(torch_ln.state_dict())` works both
ways. Inputs are CUDA tensors of float16 or bfloat16 (as the kernels take; a norm's weight and
bias may be float32, their gradients come back in their own dtype); anything else is a
TypeError from the operator. The modules trace under torch.compile(fullgraph=True) with no graph
break and run inside CUDA-graph capture (after a warm-up call has loaded their kernels).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

import tilec.torch_eager as torch_eager
import tilec.torch_ops as torch_ops

__all__ = ["LayerNorm", "Linear", "RMSNorm"]


class Linear(torch.nn.Linear):
    """torch.nn.Linear: y = x W^T + b through tilec::gemm. `activation` ("relu", "gelu",
    "gelu_tanh"; None by default, as torch's) applies one in the GEMM's epilogue."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        activation: str | None = None,
    ) -> None:
        if activation not in torch_ops.ACTIVATIONS:
            raise ValueError(
                f"tilec.nn.Linear: activation one of {torch_ops.ACTIVATIONS}, got {activation!r}"
            )
        super().__init__(in_features, out_features, bias, device, dtype)
        self.activation = activation

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() == 2:
            return torch_eager.gemm(x, self.weight.t(), self.bias, self.activation)
        rows = x.reshape(-1, self.in_features)
        y = torch_eager.gemm(rows, self.weight.t(), self.bias, self.activation)
        return y.view(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        act = f", activation={self.activation!r}" if self.activation else ""
        return super().extra_repr() + act


def _flat(x: Tensor, shape: tuple[int, ...], module: str) -> Tensor:
    """x with its last len(shape) dimensions (which must be `shape`) as one."""
    if len(shape) == 1 and x.dim() and x.shape[-1] == shape[0]:  # the common case, quickly
        return x
    if tuple(x.shape[len(x.shape) - len(shape) :]) != shape:
        raise ValueError(f"tilec.nn.{module}: input's last dimensions {shape} expected, got "
                         f"{tuple(x.shape)}")  # fmt: skip
    return x if len(shape) == 1 else x.reshape(*x.shape[: x.dim() - len(shape)], math.prod(shape))


def _vec(p: Tensor | None) -> Tensor | None:
    """A norm's weight or bias as the kernels take it: one dimension (None stays None)."""
    return p if p is None or p.dim() == 1 else p.reshape(-1)


class LayerNorm(torch.nn.LayerNorm):
    """torch.nn.LayerNorm over the last len(normalized_shape) dimensions, through
    tilec::layernorm (its rows: those dimensions as one)."""

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(self.normalized_shape)
        rows = _flat(x, shape, "LayerNorm")
        y = torch_eager.layernorm(rows, _vec(self.weight), _vec(self.bias), self.eps)
        return y if rows is x else y.view(x.shape)


class RMSNorm(torch.nn.RMSNorm):
    """torch.nn.RMSNorm over the last len(normalized_shape) dimensions, through tilec::rmsnorm;
    eps None is the input dtype's epsilon, as torch's."""

    def forward(self, x: Tensor) -> Tensor:
        shape = tuple(self.normalized_shape)
        rows = _flat(x, shape, "RMSNorm")
        y = torch_eager.rmsnorm(rows, _vec(self.weight), self.eps)
        return y if rows is x else y.view(x.shape)
