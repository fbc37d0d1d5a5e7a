"""GPU tier: tilec.ops.attention_varlen (tilec/ops/attention.py) through the varlen attention
families against a float64 SDPA reference per sequence (test/gpu/attention_check.py): each
mask, dtype and head dim the families hold (the build the device picks: sm_90a's
examples/attention_sm90_varlen.tile where it has D, examples/attention_varlen.tile else),
ragged cu_seqlens with empty and one-token sequences, GQA, inputs that must be copied (D not
contiguous), the LSE, and the empty cases (no keys at all, no sequence, max_seqlen_q = 0).

Families: bash test/gpu/build_attention_families.sh on a machine with MLIR (or
$TILEC_FAMILIES); this file needs only the runtime, torch and a GPU.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

ROOT = Path(
    os.environ.get("TILEC_FAMILIES", Path(__file__).resolve().parents[2] / "build/families")
)
NAMES = ("attention_varlen", "attention_varlen_causal", "attention_varlen_causal_br")
if not all((ROOT / f / "family.json").is_file() for f in NAMES):
    pytest.skip(f"no varlen attention families in {ROOT} (test/gpu/build_attention_families.sh)",
                allow_module_level=True)  # fmt: skip
os.environ.setdefault("TILEC_FAMILIES", str(ROOT))

from attention_check import DTYPES, check_sequences, cumulative, generator  # noqa: E402

import tilec.ops as ops  # noqa: E402
from tilec.ops.attention_specs import HEAD_DIMS  # noqa: E402

ALIGN = {0: "top_left", 1: "top_left", 2: "bottom_right"}  # CAUSAL -> causal_alignment


def run(d: int, dtype: str, causal: int, q_lens: list[int], k_lens: list[int], h: int = 4,
        hk: int = 2, strided: bool = False) -> None:  # fmt: skip
    """One call on packed random sequences, each checked against its own reference
    (`strided`: q with D not contiguous, which tilec.ops copies)."""
    g = generator("ops", d, dtype, causal, q_lens, k_lens, h, hk, strided)
    tq, tk = sum(q_lens), sum(k_lens)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device="cuda", generator=g).to(DTYPES[dtype])

    q = rand(tq, d, h).transpose(1, 2) if strided else rand(tq, h, d)
    k, v = rand(tk, hk, d), rand(tk, hk, d)
    cu_q, cu_k = cumulative(q_lens), cumulative(k_lens)
    o, lse = ops.attention_varlen(q, k, v, cu_q, cu_k, max(q_lens, default=0),
                                  causal=causal > 0, causal_alignment=ALIGN[causal],
                                  return_lse=True)  # fmt: skip
    torch.cuda.synchronize()
    assert o.shape == (tq, h, d) and o.dtype == q.dtype and lse.shape == (h, tq)
    scale = 1.0 / math.sqrt(d)
    check_sequences((q, k, v), (o, lse), (q_lens, k_lens), causal, scale, dtype)


@pytest.mark.parametrize("causal", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("d", HEAD_DIMS)
def test_each_build(d: int, dtype: str, causal: int) -> None:
    run(d, dtype, causal, [100, 1, 257, 0, 64], [37, 300, 129, 5, 0])


@pytest.mark.parametrize("hk", [4, 1])
def test_grouped_and_strided(hk: int) -> None:
    run(128, "f16", 2, [190, 3, 77], [270, 9, 77], h=4, hk=hk, strided=True)


def test_empty_cases() -> None:
    """No key at all: O 0, LSE -inf (no launch); no sequence and max_seqlen_q = 0: nothing."""
    q = torch.randn(5, 2, 64, device="cuda").half()
    k = torch.empty(0, 2, 64, device="cuda").half()
    cu_q, cu_k = cumulative([5]), cumulative([0])
    o, lse = ops.attention_varlen(q, k, k, cu_q, cu_k, 5, return_lse=True)
    assert torch.equal(o, torch.zeros_like(o)) and bool((lse == -math.inf).all())
    none = torch.empty(0, 2, 64, device="cuda").half()
    o = ops.attention_varlen(none, none, none, cumulative([]), cumulative([]), 0)
    assert o.shape == (0, 2, 64)


def test_bad_arguments() -> None:
    q = torch.randn(5, 2, 64, device="cuda").half()
    cu = cumulative([5])
    with pytest.raises(TypeError, match="int32"):
        ops.attention_varlen(q, q, q, cu.long(), cu, 5)
    with pytest.raises(ValueError, match="one length"):
        ops.attention_varlen(q, q, q, cu, cumulative([2, 3]), 5)
    with pytest.raises(ValueError, match="rank 3"):
        ops.attention_varlen(q[None], q, q, cu, cu, 5)
    with pytest.raises(ValueError, match="max_seqlen_q"):
        ops.attention_varlen(q, q, q, cu, cu, -1)
