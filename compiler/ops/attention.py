"""tilec.ops.attention: attention forward on torch tensors through the attention families
(tilec/ops/attention_specs.py; docs/runtime.md, "tilec.ops.attention").

`attention(q, k, v)` computes softmax(scale · q kᵀ + mask) v as
torch.nn.functional.scaled_dot_product_attention does, for q of (B, H, M, D) and k, v of
(B, HK, N, D), H a multiple of HK (grouped-query attention: query head h reads kv head
h // (H / HK)), and the row log-sum-exp of the scaled, masked scores when asked. Like every
tilec.ops call it reads shapes, strides, dtypes, devices and pointer alignment only (never the
data), allocates its outputs and launches on torch's current stream.

The checks and the outputs' layout (`check_attention`, `outputs`) read metadata only, so
torch.ops.tilec.attention's fake kernel (tilec/torch_ops.py) runs them too.

`attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q)` is the same over a batch
of variable-length sequences packed along one token mode, flash_attn_varlen_func's interface.
"""

from __future__ import annotations

import math
from typing import Any

from tilec.ops import family, on_stream
from tilec.ops.attention_specs import (
    FAMILIES,
    HEAD_DIMS,
    SM80_DIMS,
    SM90_DIMS,
    VARLEN_FAMILIES,
)
from tilec.ops.planned import SCALAR, PlannedCalls, first

__all__ = ["attention", "attention_varlen", "causal_mode", "check_attention", "outputs"]

ALIGNMENTS = {"top_left": 1, "bottom_right": 2}  # -> the kernels' CAUSAL
CHUNK = 8  # f16/bf16 elements in 16 bytes: the strides TMA and cp.async take
PLANNED = PlannedCalls()  # attention's calls, planned (tilec/ops/planned.py)


def causal_mode(causal: bool, alignment: str = "top_left") -> int:
    """The kernels' CAUSAL: 0 (no mask), 1 (top-left: torch's is_causal) or 2 (bottom-right)."""
    if not isinstance(causal, bool):
        raise TypeError(f"tilec.ops.attention: causal must be a bool, got {type(causal).__name__}")
    if alignment not in ALIGNMENTS:
        raise ValueError(f"tilec.ops.attention: causal_alignment one of {tuple(ALIGNMENTS)}, "
                         f"got {alignment!r}")  # fmt: skip
    return ALIGNMENTS[alignment] if causal else 0


def attention_scale(scale: Any, d: int) -> float:
    """The scores' scale: 1/sqrt(D) for None, else a positive Python number (the kernels take
    the row max of the scaled scores from the unscaled ones, which needs scale > 0)."""
    if scale is None:
        return 1.0 / math.sqrt(d)
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise TypeError(f"tilec.ops.attention: scale must be a Python float or None, got "
                        f"{type(scale).__name__}")  # fmt: skip
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"tilec.ops.attention: scale must be finite and > 0, got {scale}")
    return float(scale)


def check_attention(q: Any, k: Any, v: Any) -> None:
    """Ranks, dtypes, devices and shapes of q (B, H, M, D), k and v (B, HK, N, D): metadata
    only (the real call also wants CUDA tensors)."""
    import torch

    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"tilec.ops.attention: {name} must be a torch.Tensor, got "
                            f"{type(x).__name__}")  # fmt: skip
        if x.dtype not in (torch.float16, torch.bfloat16):
            raise TypeError(f"tilec.ops.attention: {name} of float16 or bfloat16, got {x.dtype}")
        if x.dim() != 4:
            raise ValueError(f"tilec.ops.attention: {name} of rank 4 ((B, heads, sequence, D)), "
                             f"got shape {list(x.shape)}")  # fmt: skip
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"tilec.ops.attention: q, k and v of one dtype, got {q.dtype}, "
                        f"{k.dtype} and {v.dtype}")  # fmt: skip
    if k.device != q.device or v.device != q.device:
        raise ValueError(f"tilec.ops.attention: q, k and v on one device, got {q.device}, "
                         f"{k.device} and {v.device}")  # fmt: skip
    b, h, _, d = q.shape
    if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d:
        raise ValueError(f"tilec.ops.attention: k and v of (B, HK, N, D) = (B={b}, HK, N, D={d}) "
                         f"expected, got k {list(k.shape)} and v {list(v.shape)}")  # fmt: skip
    hk = k.shape[1]
    if h and (hk == 0 or h % hk):
        raise ValueError(f"tilec.ops.attention: q's {h} heads must be a multiple of k's and v's "
                         f"{hk} (grouped-query attention)")  # fmt: skip
    if d not in HEAD_DIMS:
        raise ValueError(
            f"tilec.ops.attention: head dim D = {d} is not supported: D is one of "
            f"{', '.join(map(str, HEAD_DIMS))} (the SM90 kernel takes {SM90_DIMS}, the SM80 "
            f"kernel {SM80_DIMS})"
        )


def _on_gpu(op: str, q: Any) -> None:
    if not q.is_cuda:
        raise TypeError(f"tilec.ops.{op}: q, k and v are on {q.device}; CUDA tensors are needed")


def bshd(q: Any) -> bool:
    """Whether q is a (B, S, H, D) tensor seen as (B, H, S, D) (q.transpose(1, 2)): its heads
    lie closer together than its rows."""
    return q.stride(1) < q.stride(2)


def outputs(q: Any) -> tuple[Any, Any]:
    """Fresh O (q's shape and dtype, laid out as q: (B, S, H, D) memory where q is a transposed
    (B, S, H, D) tensor, else contiguous (B, H, S, D)) and LSE (contiguous f32 (B, H, M))."""
    import torch

    b, h, m, d = q.shape
    o = q.new_empty((b, m, h, d)).transpose(1, 2) if bshd(q) else q.new_empty((b, h, m, d))
    return o, q.new_empty((b, h, m), dtype=torch.float32)


def operand(x: Any) -> Any:
    """x as the kernels read it: D contiguous, the other strides positive whole 16-byte chunks
    and the base 16-byte aligned (TMA's rule, and cp.async's 16-byte copies); else a contiguous
    copy (an expanded, stride-0 dim is materialised: TMA takes no zero stride)."""
    strides = x.stride()
    chunks = all(s > 0 and s % CHUNK == 0 for s in strides[:-1])
    if strides[-1] == 1 and chunks and x.data_ptr() % 16 == 0:
        return x
    return x.contiguous() if not x.is_contiguous() else x.clone()


@on_stream
def attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    causal: bool = False,
    causal_alignment: str = "top_left",
    scale: float | None = None,
    return_lse: bool = False,
) -> Any:
    """softmax(scale · q kᵀ + mask) v for q of (B, H, M, D) and k, v of (B, HK, N, D) (H a
    multiple of HK; any strides), f16 or bf16, D one of 64, 96, 128, 256. `causal` masks key
    c for query r unless c <= r (`causal_alignment="top_left"`, torch's is_causal) or
    c <= r + N - M ("bottom_right", FlashAttention's; rows that see no key give 0 and an LSE
    of -inf). `scale` defaults to 1/sqrt(D). Returns O of q's shape and dtype (laid out as q,
    see `outputs`), and with `return_lse` also (O, LSE), LSE the f32 (B, H, M) log-sum-exp
    of each row's scaled, masked scores (natural log)."""
    scalars = (causal, causal_alignment, scale, return_lse)
    found = PLANNED.run("attention", (q, k, v), scalars)
    if found is not None:  # a signature planned before: checked then
        return found
    check_attention(q, k, v)
    _on_gpu("attention", q)
    mode = causal_mode(causal, causal_alignment)
    s = attention_scale(scale, q.shape[3])
    o, lse = outputs(q)
    if o.numel() and k.shape[2] == 0:  # no key at all: every row sees none
        o.zero_()
        lse.fill_(-math.inf)
    elif o.numel():
        qkv = (operand(q), operand(k), operand(v))
        family(FAMILIES[mode])(*qkv, o, lse, s)
        step = (family(FAMILIES[mode]).launch(*qkv, o, lse, s), (0, 1, 2, 3, 4, SCALAR),
                (None,) * 5 + (s,))  # fmt: skip
        prepare = tuple(None if r is x else operand for x, r in zip((q, k, v), qkv, strict=True))
        result = _with_lse if return_lse else first
        PLANNED.remember("attention", (q, k, v), scalars, (step,), _outputs, prepare, result)
    return (o, lse) if return_lse else o


def _outputs(tensors: tuple[Any, ...]) -> tuple[Any, Any]:
    return outputs(tensors[0])


def _with_lse(news: tuple[Any, ...]) -> tuple[Any, Any]:
    return news[0], news[1]


def check_varlen(q: Any, k: Any, v: Any, cu_q: Any, cu_k: Any, max_q: Any) -> None:
    """q (TQ, H, D), k and v (TK, HK, D), cu_q and cu_k int32 (B + 1,) on q's device, max_q a
    Python int >= 0: metadata only."""
    import torch

    # attention's checks on (1, heads, tokens, D) views: dtypes, devices, heads and D
    for name, x in (("q", q), ("k", k), ("v", v)):
        if isinstance(x, torch.Tensor) and x.dim() != 3:
            raise ValueError(f"tilec.ops.attention_varlen: {name} of rank 3 ((tokens, heads, "
                             f"D)), got shape {list(x.shape)}")  # fmt: skip
    views = (x[None].transpose(1, 2) if isinstance(x, torch.Tensor) else x for x in (q, k, v))
    check_attention(*views)
    for name, c in (("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
        if not isinstance(c, torch.Tensor) or c.dtype != torch.int32 or c.dim() != 1:
            raise TypeError(f"tilec.ops.attention_varlen: {name} must be a rank-1 int32 "
                            f"torch.Tensor of B + 1 cumulative lengths")  # fmt: skip
        if c.device != q.device or c.numel() == 0:
            raise ValueError(f"tilec.ops.attention_varlen: {name} on q's device ({q.device}), "
                             f"B + 1 >= 1 entries, got {c.numel()} on {c.device}")  # fmt: skip
    if cu_q.numel() != cu_k.numel():
        raise ValueError(f"tilec.ops.attention_varlen: cu_seqlens_q and cu_seqlens_k of one "
                         f"length (B + 1), got {cu_q.numel()} and {cu_k.numel()}")  # fmt: skip
    if isinstance(max_q, bool) or not isinstance(max_q, int) or not 0 <= max_q < 2**31:
        raise ValueError(f"tilec.ops.attention_varlen: max_seqlen_q must be a Python int from 0 "
                         f"to 2^31 - 1, got {max_q!r}")  # fmt: skip


@on_stream
def attention_varlen(
    q: Any,
    k: Any,
    v: Any,
    cu_seqlens_q: Any,
    cu_seqlens_k: Any,
    max_seqlen_q: int,
    *,
    causal: bool = False,
    causal_alignment: str = "top_left",
    scale: float | None = None,
    return_lse: bool = False,
) -> Any:
    """Attention over B packed sequences, as flash_attn_varlen_func: sequence b's queries are
    rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1 of q (TQ, H, D), its keys and values rows
    cu_seqlens_k[b] .. cu_seqlens_k[b + 1] - 1 of k and v (TK, HK, D) (H a multiple of HK;
    any strides, f16 or bf16, D one of 64, 96, 128, 256); cu_seqlens_* are int32 (B + 1,)
    CUDA tensors, max_seqlen_q at least the longest query sequence (the grid's extent; the
    rows of a longer one are left unwritten, as flash_attn leaves them; never read: no host
    synchronisation). `causal` and `causal_alignment` as `attention`'s, within each sequence
    (flash_attn's causal=True is "bottom_right"); a row that sees no key gives 0 and an LSE
    of -inf. Returns O (TQ, H, D) of q's dtype, and with `return_lse` (O, LSE), LSE the f32
    (H, TQ) log-sum-exp (flash_attn's softmax_lse)."""
    check_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q)
    _on_gpu("attention_varlen", q)
    mode = causal_mode(causal, causal_alignment)
    s = attention_scale(scale, q.shape[2])
    import torch

    o = q.new_empty(q.shape)
    lse = q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)
    batch = cu_seqlens_q.numel() - 1
    if o.numel() and k.shape[0] == 0:  # no key at all: every row sees none
        o.zero_()
        lse.fill_(-math.inf)
    elif o.numel() and batch and max_seqlen_q:
        args = (operand(q), operand(k), operand(v), o, lse, cu_seqlens_q, cu_seqlens_k)
        family(VARLEN_FAMILIES[mode])(*args, max_seqlen_q, s)
    return (o, lse) if return_lse else o
