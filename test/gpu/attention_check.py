"""GPU tier helpers shared by test_attention.py (SM80) and test_attention_sm90.py: fresh
seeded data per case, the float64 reference (scaled_dot_product_attention with the causal
masks, GQA by repeating kv heads, torch.logsumexp for the LSE) and the check of O and LSE.
Imported after the tests' skips (it needs torch and a GPU)."""

from __future__ import annotations

import math
import zlib

import torch

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
TOLERANCE = {"f16": 4e-3, "bf16": 2.5e-2}  # relative (Frobenius) error of O
LSE_TOLERANCE = 2e-3  # absolute: the scores are the inputs' own, only the sums differ


def generator(*case: object) -> torch.Generator:
    """A generator seeded by the case (fresh data per case, the same on every run)."""
    return torch.Generator(device="cuda").manual_seed(zlib.crc32(repr(case).encode()))


def visible(m: int, n: int, causal: int) -> torch.Tensor:
    """Which key each query sees: everything, c <= r (top-left) or c <= r + n - m."""
    rows = torch.arange(m, device="cuda")[:, None]
    cols = torch.arange(n, device="cuda")[None, :]
    if causal == 0:
        return torch.ones(m, n, dtype=torch.bool, device="cuda")
    return cols <= rows + (0 if causal == 1 else n - m)


def reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: int, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(O, LSE) in float64 for (B, H, M, D) q and (B, HK, N, D) k, v: SDPA with the mask,
    kv head h // (H / HK) for query head h; rows that see no key are 0 with LSE -inf."""
    q, k, v = (x.double() for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = (x.repeat_interleave(group, dim=1) for x in (k, v))
    seen = visible(q.shape[2], k.shape[2], causal)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=seen, scale=scale)
    scores = (scale * q @ k.transpose(2, 3)).masked_fill(~seen, -math.inf)
    lse = torch.logsumexp(scores, dim=-1)
    empty = ~seen.any(dim=1)  # rows above a bottom-right diagonal (M > N): no key
    out[:, :, empty] = 0.0
    return out, lse


def check(o: torch.Tensor, lse: torch.Tensor, ref: tuple, dtype: str) -> None:
    ref_o, ref_lse = ref
    assert not torch.isnan(o).any(), "unwritten or NaN outputs"
    assert not torch.isnan(lse).any(), "unwritten or NaN log-sum-exp"
    scale = ref_o.norm().item() or 1.0
    err = (o.double() - ref_o).norm().item() / scale
    assert err < TOLERANCE[dtype], err
    finite = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), finite), "LSE is -inf exactly where a row sees no key"
    gap = (lse.double() - ref_lse)[finite].abs().max().item() if finite.any() else 0.0
    assert gap < LSE_TOLERANCE, gap


def launch(
    kernel: object,
    name: str,
    build: tuple[int, str, int],
    shape: tuple[int, int, int, int, int],
    sharp: float = 1.0,
    bshd: bool = False,
) -> None:
    """One launch of `kernel` (build (D, dtype, CAUSAL)) on fresh randn q, k, v of
    (B, H, M, D) and (B, HK, N, D) (or (B, S, H, D) ones passed transposed), the outputs
    NaN-poisoned, checked against float64."""
    d, dtype, causal = build
    b, h, hk, m, n = shape
    g = generator(name, b, h, hk, m, n, bshd)

    def rand(heads: int, rows: int) -> torch.Tensor:
        shape = (b, rows, heads, d) if bshd else (b, heads, rows, d)
        x = torch.randn(shape, device="cuda", generator=g).to(DTYPES[dtype])
        return x.transpose(1, 2) if bshd else x

    q, k, v = rand(h, m), rand(hk, n), rand(hk, n)
    o = torch.full_like(rand(h, m), math.nan)
    lse = torch.full((b, h, m), math.nan, device="cuda")
    scale = sharp / math.sqrt(d)
    kernel(q, k, v, o, lse, scale)
    torch.cuda.synchronize()
    check(o, lse, reference(q, k, v, causal, scale), dtype)


def cumulative(lengths: list[int]) -> torch.Tensor:
    """cu_seqlens of packed sequences: 0, then the running sums of `lengths` (i32, on the GPU)."""
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return torch.tensor(out, dtype=torch.int32, device="cuda")


def empty(m: int, h: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A sequence without keys: every row's output is 0 and its LSE -inf."""
    zeros = torch.zeros(1, h, m, d, dtype=torch.float64, device="cuda")
    return zeros, torch.full((1, h, m), -math.inf, dtype=torch.float64, device="cuda")


def check_sequences(
    qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    out: tuple[torch.Tensor, torch.Tensor],
    lengths: tuple[list[int], list[int]],
    causal: int,
    scale: float,
    dtype: str,
) -> None:
    """Packed varlen outputs (O of (TQ, H, D), LSE of (H, TQ)) checked sequence by sequence
    against each one's own float64 reference (q, k, v packed as (T, heads, D))."""
    q, k, v = qkv
    o, lse = out
    h, d = q.shape[1], q.shape[2]
    cu_q, cu_k = cumulative(lengths[0]).tolist(), cumulative(lengths[1]).tolist()
    for b, (m, n) in enumerate(zip(*lengths, strict=True)):
        if m == 0:
            continue
        q0, k0 = cu_q[b], cu_k[b]
        part = (x[None].transpose(1, 2) for x in (q[q0 : q0 + m], k[k0 : k0 + n], v[k0 : k0 + n]))
        ref = reference(*part, causal, scale) if n else empty(m, h, d)
        check(o[q0 : q0 + m][None].transpose(1, 2), lse[:, q0 : q0 + m][None], ref, dtype)
