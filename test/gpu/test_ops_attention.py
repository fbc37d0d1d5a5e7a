"""GPU tier: tilec.ops.attention and torch.ops.tilec.attention (tilec/ops/attention.py) against
torch.nn.functional.scaled_dot_product_attention in float64 (test/gpu/attention_check.py's
reference and check) on fresh randn data: every build of the attention families this device
runs (launched directly on NaN-poisoned outputs), the build each head dim, mask and dtype picks,
ragged shapes, both causal alignments (rows without keys too), grouped- and multi-query heads,
(B, S, H, D) tensors through q.transpose(1, 2), inputs copied (D not contiguous, misaligned,
row strides off 16 bytes), the scale, the LSE, empty sizes, bad input refused, no host
synchronisation, stream=, and the torch operator: opcheck, its backward refused,
torch.compile(fullgraph=True) with no graph break and a CUDA-graph replay equal to eager.
tilec.ops allocates the outputs itself: here they come NaN-filled (`outputs` patched), so an
element a kernel leaves unwritten shows.

Families: bash test/gpu/build_attention_families.sh on a machine with MLIR (or
$TILEC_FAMILIES); this file needs only the runtime, torch and a GPU.
"""

from __future__ import annotations

import math
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

ROOT = Path(
    os.environ.get("TILEC_FAMILIES", Path(__file__).resolve().parents[2] / "build/families")
)
NAMES = ("attention", "attention_causal", "attention_causal_br")
if not all((ROOT / f / "family.json").is_file() for f in NAMES):
    pytest.skip(f"no attention families in {ROOT} (test/gpu/build_attention_families.sh)",
                allow_module_level=True)  # fmt: skip
os.environ.setdefault("TILEC_FAMILIES", str(ROOT))

from attention_check import DTYPES, check, generator, reference  # noqa: E402

import tilec.ops as ops  # noqa: E402
import tilec.torch_ops  # noqa: E402, F401  (registers torch.ops.tilec)
from tilec.ops.attention_specs import FAMILIES, HEAD_DIMS, SM90_DIMS  # noqa: E402
from tilec.runtime.family import device_arch, runs_on  # noqa: E402

ARCH = device_arch(None)
ALIGN = {0: "top_left", 1: "top_left", 2: "bottom_right"}  # CAUSAL -> causal_alignment
CHOSEN: dict[str, set[str]] = defaultdict(set)
Shape = tuple[int, int, int, int, int]  # (B, H, HK, M, N)


@pytest.fixture(autouse=True)
def nan_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """tilec.ops.attention's outputs NaN-filled before its launch."""
    module = sys.modules["tilec.ops.attention"]
    real = module.outputs

    def poisoned(q: Any) -> tuple[Any, Any]:
        o, lse = real(q)
        return o.fill_(math.nan), lse.fill_(math.nan)

    monkeypatch.setattr(module, "outputs", poisoned)


def qkv(shape: Shape, d: int, dtype: str, bshd: bool = False) -> tuple[Any, Any, Any]:
    """Fresh randn q (B, H, M, D), k and v (B, HK, N, D); (B, S, H, D) ones transposed."""
    b, h, hk, m, n = shape
    g = generator("ops", shape, d, dtype, bshd)

    def rand(heads: int, rows: int) -> Any:
        size = (b, rows, heads, d) if bshd else (b, heads, rows, d)
        x = torch.randn(size, device="cuda", generator=g).to(DTYPES[dtype])
        return x.transpose(1, 2) if bshd else x

    return rand(h, m), rand(hk, n), rand(hk, n)


def run(q: Any, k: Any, v: Any, causal: int, dtype: str, scale: float | None = None) -> Any:
    """tilec.ops.attention with the mask CAUSAL, checked against float64; O returned."""
    o, lse = ops.attention(q, k, v, causal=causal > 0, causal_alignment=ALIGN[causal],
                           scale=scale, return_lse=True)  # fmt: skip
    torch.cuda.synchronize()
    s = 1 / math.sqrt(q.shape[3]) if scale is None else scale
    check(o, lse, reference(q, k, v, causal, s), dtype)
    assert o.dtype == q.dtype and lse.dtype == torch.float32
    return o


# every build, launched directly; the build each rule picks ------------------------------------


def _builds() -> list[tuple[int, str]]:
    out = []
    for causal, name in FAMILIES.items():
        spec = ops.family(name).spec
        out += [(causal, b) for b, build in spec.builds.items() if runs_on(build.arch, ARCH)]
    return out


@pytest.mark.parametrize("shape", [(2, 4, 2, 129, 257), (1, 2, 1, 200, 256)], ids=str)
@pytest.mark.parametrize("causal_build", _builds(), ids=lambda cb: f"c{cb[0]}-{cb[1]}")
def test_every_build(causal_build: tuple[int, str], shape: Shape) -> None:
    """Each build this device runs (sm_80 ones on SM 9.0 too), on NaN-poisoned O and LSE:
    ragged M and N, grouped heads, and N a multiple of every BN (the unmasked variant)."""
    causal, name = causal_build
    build = ops.family(FAMILIES[causal]).spec.builds[name]
    d, dtype = int(build.params["D"]), build.params["T"]
    q, k, v = qkv(shape, d, dtype)
    o = torch.full_like(q, math.nan)
    lse = torch.full(q.shape[:3], math.nan, device="cuda")
    scale = 1 / math.sqrt(d)
    ops.family(FAMILIES[causal]).kernel(name)(q, k, v, o, lse, scale)
    torch.cuda.synchronize()
    check(o, lse, reference(q, k, v, causal, scale), dtype)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("d", HEAD_DIMS)
@pytest.mark.parametrize("causal", [0, 1, 2])
def test_rules_pick_the_build(causal: int, d: int, dtype: str) -> None:
    """The family's choice for each head dim, mask and dtype, then tilec.ops.attention."""
    q, k, v = qkv((2, 4, 2, 150, 333), d, dtype)
    fam = ops.family(FAMILIES[causal])
    o, lse = torch.empty_like(q), q.new_empty(q.shape[:3], dtype=torch.float32)
    name = fam.select(q, k, v, o, lse, 1.0)
    CHOSEN[FAMILIES[causal]].add(name)
    sm90 = ARCH == "sm_90" and d in SM90_DIMS
    assert name == f"d{d}_{dtype}_{'sm90a' if sm90 else 'sm80'}"
    run(q, k, v, causal, dtype)


def test_every_rule_was_exercised() -> None:
    if not CHOSEN:
        pytest.skip("run with the tests above (pytest test/gpu/test_ops_attention.py)")
    for name in FAMILIES.values():
        spec = ops.family(name).spec
        first = {}
        for r in spec.rules:  # the first rule of each head dim and dtype this device runs
            if runs_on(spec.builds[r.build].arch, ARCH):
                first.setdefault((r.when, r.dtypes["Q"]), r.build)
        assert set(first.values()) <= CHOSEN[name], set(first.values()) - CHOSEN[name]


# shapes, masks, heads, layouts ---------------------------------------------------------------


SHAPES = [  # (B, H, HK, M, N): ragged, M != N both ways, one row, tile multiples, M > N
    (1, 2, 2, 100, 37),
    (2, 3, 3, 300, 700),
    (1, 1, 1, 1, 1),
    (1, 2, 2, 129, 257),
    (2, 2, 2, 256, 512),
    (1, 1, 1, 400, 128),
    (1, 2, 1, 3, 1000),
]


@pytest.mark.parametrize("causal", [0, 1, 2])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_shapes_and_masks(shape: Shape, causal: int) -> None:
    run(*qkv(shape, 128, "f16"), causal, "f16")


@pytest.mark.parametrize("d", [64, 96, 256])
@pytest.mark.parametrize("causal", [0, 2])
def test_other_head_dims_ragged(d: int, causal: int) -> None:
    run(*qkv((1, 3, 1, 77, 301), d, "bf16"), causal, "bf16")


@pytest.mark.parametrize("hk", [4, 2, 1])
@pytest.mark.parametrize("d", [64, 128])
def test_grouped_and_multi_query(d: int, hk: int) -> None:
    """8 query heads over 4, 2 and 1 kv heads."""
    run(*qkv((2, 8, hk, 190, 270), d, "f16"), 1, "f16")


@pytest.mark.parametrize("causal", [0, 1, 2])
@pytest.mark.parametrize("d", [64, 96, 128])
def test_bshd_through_transpose(d: int, causal: int) -> None:
    """(B, S, H, D) tensors as q.transpose(1, 2): read in place, O laid out as q."""
    q, k, v = qkv((2, 4, 2, 150, 333), d, "bf16", bshd=True)
    o = run(q, k, v, causal, "bf16")
    assert o.stride() == (150 * 4 * d, d, 4 * d, 1)
    assert torch.equal(o, ops.attention(q.contiguous(), k, v, causal=causal > 0,
                                        causal_alignment=ALIGN[causal]))  # fmt: skip


def test_inputs_the_kernels_cannot_read_are_copied() -> None:
    q, k, v = qkv((1, 2, 2, 70, 90), 128, "f16")
    wide = torch.randn(1, 2, 90, 130, device="cuda").half()  # rows of 130: off 16 bytes
    run(q, wide[..., :128], v, 0, "f16")
    cols = k.transpose(2, 3).contiguous().transpose(2, 3)  # D not contiguous
    run(q, cols, v, 1, "f16")
    flat = torch.empty(q.numel() + 1, device="cuda", dtype=q.dtype)
    shifted = flat[1:].view(q.shape).copy_(q)  # a base 2 bytes off 16
    assert shifted.data_ptr() % 16
    run(shifted, k, v, 2, "f16")
    run(q, k[:, :1].expand(k.shape), v[:, 1:].expand(v.shape), 0, "f16")  # stride-0 heads


def test_scale_and_sharp_scores() -> None:
    q, k, v = qkv((1, 2, 2, 96, 700), 64, "f16")
    run(q, k, v, 0, "f16", scale=0.3)
    run(q, k, v, 1, "f16", scale=3.0)  # scores up to ~100: the rescaling of l and o


def test_rows_without_keys() -> None:
    """Bottom-right causal with M > N: the first M - N rows see no key (O 0, LSE -inf)."""
    q, k, v = qkv((1, 2, 2, 500, 130), 128, "bf16")
    o = run(q, k, v, 2, "bf16")
    assert not o[:, :, :370].any()


def test_empty_sizes() -> None:
    for shape in ((0, 2, 1, 5, 7), (1, 0, 0, 5, 7), (1, 2, 1, 0, 7)):
        q, k, v = qkv(shape, 64, "f16")
        o, lse = ops.attention(q, k, v, return_lse=True)
        assert o.shape == q.shape and lse.shape == q.shape[:3]
    q, k, v = qkv((1, 2, 1, 5, 0), 64, "f16")  # no keys: every row sees none
    o, lse = ops.attention(q, k, v, return_lse=True)
    assert not o.any() and torch.equal(lse, torch.full_like(lse, -math.inf))


def test_refuses_bad_input() -> None:
    q, k, v = qkv((1, 4, 2, 8, 8), 64, "f16")
    cases = [
        (ValueError, "64, 96, 128, 256", lambda: ops.attention(q[..., :32], k[..., :32],
                                                               v[..., :32])),
        (ValueError, "multiple of", lambda: ops.attention(q[:, :3], k, v)),
        (TypeError, "one dtype", lambda: ops.attention(q, k.bfloat16(), v)),
        (TypeError, "CUDA tensors", lambda: ops.attention(q.cpu(), k.cpu(), v.cpu())),
        (ValueError, "one device", lambda: ops.attention(q, k.cpu(), v)),
        (ValueError, "k and v of", lambda: ops.attention(q, k, v[:, :, :4])),
        (ValueError, "causal_alignment", lambda: ops.attention(q, k, v, causal=True,
                                                               causal_alignment="lower")),
        (ValueError, "scale", lambda: ops.attention(q, k, v, scale=0.0)),
        (TypeError, "scale", lambda: ops.attention(q, k, v, scale=torch.tensor(0.1))),
    ]  # fmt: skip
    for kind, text, call in cases:
        with pytest.raises(kind, match=text):
            call()


def test_no_host_synchronisation() -> None:
    q, k, v = qkv((2, 8, 2, 300, 500), 128, "bf16")

    def step() -> None:
        ops.attention(q, k, v, causal=True)
        ops.attention(q.transpose(1, 2).contiguous().transpose(1, 2), k, v, return_lse=True)
        ops.attention(q[..., :96].contiguous(), k[..., :96], v[..., :96])

    step()
    torch.cuda.set_sync_debug_mode("error")
    try:
        step()
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_stream_argument() -> None:
    q, k, v = qkv((1, 4, 4, 256, 256), 64, "f16")
    ref = ops.attention(q, k, v)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    o = ops.attention(q, k, v, stream=s)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    assert torch.equal(o, ref)


# torch.ops.tilec.attention ---------------------------------------------------------------------


def test_operator_is_tilec_ops_attention() -> None:
    q, k, v = qkv((2, 4, 1, 100, 200), 128, "f16")
    o, lse = torch.ops.tilec.attention(q, k, v, True, "bottom_right", 0.2)
    ref = ops.attention(q, k, v, causal=True, causal_alignment="bottom_right", scale=0.2,
                        return_lse=True)  # fmt: skip
    assert torch.equal(o, ref[0]) and torch.equal(lse, ref[1])


@pytest.mark.parametrize("bshd", [False, True])
def test_opcheck(bshd: bool) -> None:
    q, k, v = qkv((1, 4, 2, 64, 96), 64, "bf16", bshd=bshd)
    for args in ((q, k, v), (q, k, v, True, "bottom_right", 0.5)):
        results = torch.library.opcheck(torch.ops.tilec.attention, args)
        assert set(results.values()) == {"SUCCESS"}, results


def test_backward_is_refused() -> None:
    q, k, v = (x.requires_grad_() for x in qkv((1, 2, 2, 64, 64), 64, "f16"))
    o, _ = torch.ops.tilec.attention(q, k, v)
    with pytest.raises(NotImplementedError, match="no backward yet"):
        o.sum().backward()


class Block(torch.nn.Module):
    """Attention between two projections of torch's, (B, S, H, D) as a model holds it."""

    def __init__(self, heads: int, d: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(heads * d, 3 * heads * d)

    def forward(self, x: Any) -> Any:
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, -1).unbind(2)
        o, _ = torch.ops.tilec.attention(q.transpose(1, 2), k.transpose(1, 2),
                                         v.transpose(1, 2), True, "top_left", None)  # fmt: skip
        return o.transpose(1, 2).flatten(2)


def test_compile_fullgraph_no_graph_breaks_matches_eager() -> None:
    m = Block(4, 64).cuda().half()
    x = torch.randn(2, 200, 256, device="cuda").half()
    with torch.no_grad():
        eager = m(x)
        torch._dynamo.reset()
        assert torch._dynamo.explain(m)(x).graph_break_count == 0
        torch._dynamo.reset()
        compiled = torch.compile(m, fullgraph=True, backend="aot_eager")(x)
    assert torch.equal(compiled, eager)


def test_cuda_graph_replay_equals_eager() -> None:
    q, k, v = qkv((2, 8, 2, 300, 700), 128, "bf16")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: kernels loaded, plans made, before the capture
        for _ in range(2):
            torch.ops.tilec.attention(q, k, v, True, "top_left", None)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = torch.ops.tilec.attention(q, k, v, True, "top_left", None)
    for seed in (1, 2):  # fresh data, then replay
        g = torch.Generator(device="cuda").manual_seed(seed)
        for x in (q, k, v):
            x.copy_(torch.randn(x.shape, device="cuda", generator=g))
        for t in captured:
            t.fill_(math.nan)
        graph.replay()
        eager = torch.ops.tilec.attention(q, k, v, True, "top_left", None)
        torch.cuda.synchronize()
        for got, ref in zip(captured, eager, strict=True):
            assert torch.equal(got, ref), "a replay differs from eager"


def test_planned_repeats_match_on_fresh_operands() -> None:
    """A repeated signature launches what its first call planned (tilec/ops/planned.py), on
    fresh data in fresh memory with NaN-filled outputs, a misaligned q copied again each call;
    the repeats must find the plan."""
    table = sys.modules["tilec.ops.attention"].PLANNED
    hits: list[bool] = []
    real = table.run
    table.run = lambda *a: hits.append((found := real(*a)) is not None) or found
    try:
        for shape, causal, shifted in (
            ((1, 4, 2, 130, 257), 1, False),
            ((2, 2, 2, 64, 96), 2, True),
        ):
            for seed in range(3):
                q, k, v = (t * (1 + 0.25 * seed) for t in qkv(shape, 128, "bf16"))
                if shifted:  # a base 2 bytes off 16: copied
                    q = torch.empty(q.numel() + 1, device="cuda", dtype=q.dtype)[1:].view(
                        q.shape).copy_(q)  # fmt: skip
                run(q, k, v, causal, "bf16")
            assert hits[-2:] == [True, True], f"{shape}: the repeats were not planned"
    finally:
        del table.run  # the method again
