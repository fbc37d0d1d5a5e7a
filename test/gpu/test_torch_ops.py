"""GPU tier: tilec.ops' backward families, torch.ops.tilec (tilec/torch_ops.py) and tilec.nn,
against torch's autograd in float64 on fresh randn inputs, outputs NaN-poisoned first: every
backward rule the device runs chosen at least once; torch.library.opcheck on each operator;
launches on torch's current stream and on `stream=` (ordered behind a sleeping stream, so a
launch on any other stream reads what is not there yet), two streams at once; no host
synchronisation; torch.compile(fullgraph=True) with zero graph breaks; a CUDA-graph replay equal
to eager; tilec.nn against torch.nn. The operators take f16/bf16 only, so gradcheck's float64
finite differences do not apply: each gradient is checked against torch's analytic one of the
same function evaluated in float64 on the same inputs.

Families: `tilec family build --op OP -o build/families/OP` (sm_90a for softmax, layernorm and
rmsnorm; the backward families' builds are sm_80) on a machine with MLIR, or $TILEC_FAMILIES;
this file needs only the runtime, torch and a GPU. Tests of gemm (tilec::gemm, tilec.nn.Linear)
skip where the GEMM families are not built (test/gpu/build_gemm_families.sh).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

ROOT = Path(
    os.environ.get("TILEC_FAMILIES", Path(__file__).resolve().parents[2] / "build/families")
)
FAMILIES = ("softmax", "layernorm", "rmsnorm", "softmax_bwd", "layernorm_bwd", "rmsnorm_bwd",
            "colsum")  # fmt: skip
if not all((ROOT / f / "family.json").is_file() for f in FAMILIES):
    pytest.skip(f"no families in {ROOT} (tilec family build --op OP)", allow_module_level=True)
os.environ.setdefault("TILEC_FAMILIES", str(ROOT))

import tilec.nn as tnn  # noqa: E402
import tilec.ops as ops  # noqa: E402
import tilec.torch_ops  # noqa: E402, F401  (registers torch.ops.tilec)
from tilec.ops import backward  # noqa: E402
from tilec.runtime.family import device_arch, runs_on  # noqa: E402

GEMM_FAMILIES = ("gemm", "gemm_bias", "gemm_bias_relu", "gemm_bias_gelu", "gemm_bias_gelu_tanh",
                 "gemm_sm80", "gemm_f32_sm80", "gemv", "pad_rows")  # fmt: skip
HAS_GEMM = all((ROOT / f / "family.json").is_file() for f in GEMM_FAMILIES)
needs_gemm = pytest.mark.skipif(not HAS_GEMM, reason="no GEMM families (build_gemm_families.sh)")
DTYPES = (torch.float16, torch.bfloat16)
IDS = ("f16", "bf16")
# Row lengths in every bucket of tilec/ops/backward_specs.py, either side of its edges, rows of
# 16-byte chunks (N % 8 == 0: the cp.async kernels) and others in each.
NS = [1, 7, 100, 256, 300, 511, 512, 1000, 1001, 2047, 2048, 3001, 4096, 4097, 8192, 8193, 20001]
CHOSEN: dict[str, set[str]] = defaultdict(set)  # family -> builds launched
EPS = 1e-5


def rand(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g)


def nans(*shape: int, dtype: Any) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def rel_err(y: torch.Tensor, ref: torch.Tensor) -> float:
    """The relative error in norm, over a floor of 1e-3 an element: a gradient that is 0 by the
    math (softmax's or LayerNorm's at N = 1) may come out within rounding of 0."""
    floor = 1e-3 * max(ref.numel(), 1) ** 0.5
    return ((y.double() - ref).norm() / (ref.norm() + floor)).item()


def tol(dt: torch.dtype) -> float:
    return {torch.bfloat16: 1.5e-2, torch.float16: 4e-3}.get(dt, 1e-5)


def close(got: torch.Tensor, ref: torch.Tensor, dt: torch.dtype, what: str) -> None:
    assert not torch.isnan(got).any(), f"{what}: unwritten or NaN"
    assert got.shape == ref.shape, what
    assert rel_err(got, ref) < tol(dt), f"{what}: relative error {rel_err(got, ref):.2e}"


def launch(name: str, *args: object) -> None:
    fam = ops.family(name)
    CHOSEN[name].add(fam.select(*args))
    fam(*args)
    torch.cuda.synchronize()


def rows_for(n: int) -> int:
    return 37 if n <= 8192 else 6


def norm_reference(op: str, x: Any, w: Any, b: Any, dy: Any, eps: float) -> list[Any]:
    """torch's gradients of the norm in float64: dx, dw (and db for LayerNorm)."""
    leaves = [t.double().requires_grad_() for t in (x, w, *([b] if op == "layernorm" else []))]
    n = x.shape[-1]
    if op == "layernorm":
        y = F.layer_norm(leaves[0], (n,), leaves[1], leaves[2], eps)
    else:
        y = F.rms_norm(leaves[0], (n,), leaves[1], eps)
    return list(torch.autograd.grad(y, leaves, dy.double()))


# tilec.ops' backward families, launched directly on NaN-poisoned outputs ------------------------


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("n", NS)
def test_softmax_backward_family(n: int, dt: torch.dtype) -> None:
    r = rows_for(n)
    y = torch.softmax(rand(r, n, seed=n) * 3, dim=1).to(dt)
    dy = rand(r, n, seed=n + 1).to(dt)
    dx = nans(r, n, dtype=dt)
    launch("softmax_bwd", y, dy, dx)
    yd, gd = y.double(), dy.double()
    close(dx, yd * (gd - (yd * gd).sum(1, keepdim=True)), dt, "dx")


def _norm_case(op: str, n: int, r: int, g: int, dt: torch.dtype, seed: int) -> None:
    """The op's backward family over R = r rows with G = g partial rows (each block walks
    about r / g rows), every output NaN-poisoned, then colsum of the partial rows."""
    x = (rand(r, n, seed=seed) * 2 + 3).to(dt)  # an offset mean: cancellation would show
    w = (1 + 0.1 * rand(n, seed=seed + 1)).to(dt)
    b = (0.1 * rand(n, seed=seed + 2)).to(dt)
    dy = rand(r, n, seed=seed + 3).to(dt)
    dx = nans(r, n, dtype=dt)
    partials = backward._partials(x, 1 + (op == "layernorm"), g, n).fill_(float("nan"))
    launch(f"{op}_bwd", x, w.expand(r, n), dy, dx, *partials.unbind(0), EPS)
    out = nans(len(partials), n, dtype=dt)
    launch("colsum", partials, out)  # dw (and db): one launch
    sums = out.unbind(0)
    refs = norm_reference(op, x, w, b, dy, EPS)
    for got, ref, what in zip([dx, *sums], refs, ("dx", "dw", "db")[: len(refs)], strict=True):
        close(got, ref, dt, f"{op} N={n} G={g} {what}")


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("n", NS)
def test_norm_backward_family(op: str, n: int, dt: torch.dtype) -> None:
    r = rows_for(n)
    _norm_case(op, n, r, 5, dt, seed=n)  # fewer blocks than rows: each carries its sums


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("n", [1000, 4096, 9001])
def test_norm_backward_one_block_and_a_block_a_row(op: str, n: int) -> None:
    for g in (1, 13):
        _norm_case(op, n, 13, g, torch.bfloat16, seed=7 * n + g)


@pytest.mark.parametrize("dt", [torch.float32, *DTYPES], ids=("f32", *IDS))
def test_colsum(dt: torch.dtype) -> None:
    """B batches of G x N partial sums into B x N, in one launch: batches further apart than
    G * N (backward._partials' padding), rows of Y that start unaligned (N odd), and nothing
    written past Y's last row (poisoned)."""
    for b, g, n in ((1, 300, 1001), (1, 1, 64), (1, 2112, 256), (2, 5, 1001), (2, 13, 4096)):
        p = backward._partials(rand(1, n, seed=0), b, g, n)
        p.copy_(rand(b, g, n, seed=g + n))
        out = nans(b + 1, n, dtype=dt)
        launch("colsum", p, out[:b])
        close(out[:b], p.double().sum(1), dt, f"B={b} G={g} N={n} sums")
        assert torch.isnan(out[b]).all(), f"B={b} G={g} N={n}: wrote past the last row"


def test_backward_ops_api() -> None:
    """tilec.ops.backward as a user calls it: any dim, an expanded gradient, an f32 weight,
    empty tensors, bad input refused."""
    x = rand(4, 6, 1001, seed=1).half()
    for dim in (-1, 0, 1):
        y = ops.softmax(x, dim=dim)
        dy = rand(*x.shape, seed=2).half()
        yd = torch.softmax(x.double(), dim)
        ref = yd * (dy.double() - (yd * dy.double()).sum(dim, keepdim=True))
        close(backward.softmax_backward(y, dy, dim), ref, torch.float16, f"softmax dim {dim}")
    w = (1 + 0.1 * rand(1001, seed=3)).float()
    ones = torch.ones(1, device="cuda", dtype=torch.half).expand(x.shape)  # as sum() hands over
    dx, dw, db = backward.layernorm_backward(x, ones, w)
    refs = norm_reference("layernorm", x, w, w, ones, EPS)
    assert (dw.dtype, db.dtype) == (torch.float32, torch.float32)
    for got, ref, what in zip((dx, dw, db), refs, ("dx", "dw", "db"), strict=True):
        close(got, ref, torch.float16, f"{what} of an expanded dy")
    apart = backward.layernorm_backward(x, ones, w, apart=True)  # dw, db: a colsum launch each
    assert all(torch.equal(a, b) for a, b in zip(apart, (dx, dw, db), strict=True))
    assert apart[1].untyped_storage().data_ptr() != apart[2].untyped_storage().data_ptr()
    dx, dw = backward.rmsnorm_backward(x[:0], x[:0], w)
    assert dx.shape == (0, 6, 1001) and torch.equal(dw, torch.zeros_like(w))
    with pytest.raises(ValueError, match="dy of shape"):
        backward.layernorm_backward(x, x[:, :, 1:])
    with pytest.raises(TypeError, match="weight of"):
        backward.rmsnorm_backward(x, x, w.double())


def test_every_backward_rule_was_exercised() -> None:
    arch = device_arch(None)
    for name in ("softmax_bwd", "layernorm_bwd", "rmsnorm_bwd", "colsum"):
        spec = ops.family(name).spec
        runnable = {r.build for r in spec.rules if runs_on(spec.builds[r.build].arch, arch)}
        if not CHOSEN[name]:
            pytest.skip("run with the tests above (pytest test/gpu/test_torch_ops.py)")
        assert runnable <= CHOSEN[name], f"{name}: never chosen: {sorted(runnable - CHOSEN[name])}"


# torch.ops.tilec: opcheck, autograd ------------------------------------------------------------


def _opcheck_cases() -> list[tuple[str, tuple[Any, ...]]]:
    x = rand(24, 1000, seed=11).to(torch.bfloat16).requires_grad_()
    w = (1 + 0.1 * rand(1000, seed=12)).to(torch.bfloat16).requires_grad_()
    b = (0.1 * rand(1000, seed=13)).to(torch.bfloat16).requires_grad_()
    dy = rand(24, 1000, seed=14).to(torch.bfloat16)
    cases = [
        ("softmax", (x, 1)),
        ("softmax", (x.detach().view(4, 6, 1000).requires_grad_(), 1)),
        ("softmax_backward", (torch.softmax(x.detach(), 1), dy, 1)),
        ("layernorm", (x, w, b, EPS)),
        ("layernorm", (x, None, None, 1e-3)),
        ("layernorm_backward", (dy, x.detach(), w.detach().float(), EPS)),
        ("rmsnorm", (x, w, None)),
        ("rmsnorm_backward", (dy, x.detach(), w.detach(), 1e-6)),
    ]
    if HAS_GEMM:
        bt = rand(1000, 256, seed=15).to(torch.bfloat16).requires_grad_()
        bias = rand(256, seed=16).to(torch.bfloat16).requires_grad_()
        cases += [("gemm", (x, bt, bias, "gelu", None)), ("gemm", (x, bt, None, "relu", None))]
    return cases


@pytest.mark.parametrize("case", range(len(_opcheck_cases())))
def test_opcheck(case: int) -> None:
    name, args = _opcheck_cases()[case]
    results = torch.library.opcheck(getattr(torch.ops.tilec, name), args)
    assert set(results.values()) == {"SUCCESS"}, results


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("n", [300, 1001, 4096, 8193])
def test_norm_gradients_match_torch(n: int, dt: torch.dtype) -> None:
    r = 64
    x = (rand(r, n, seed=n) + 1).to(dt).requires_grad_()
    w = (1 + 0.1 * rand(n, seed=n + 1)).to(dt).requires_grad_()
    b = (0.1 * rand(n, seed=n + 2)).to(dt).requires_grad_()
    dy = rand(r, n, seed=n + 3).to(dt)
    y = torch.ops.tilec.layernorm(x, w, b, EPS)
    got = torch.autograd.grad(y, (x, w, b), dy)
    refs = norm_reference("layernorm", x.detach(), w.detach(), b.detach(), dy, EPS)
    for g, ref, what in zip(got, refs, ("dx", "dw", "db"), strict=True):
        close(g, ref, dt, f"layernorm {what}")
    y = torch.ops.tilec.rmsnorm(x, w, 1e-6)
    got = torch.autograd.grad(y, (x, w), dy)
    refs = norm_reference("rmsnorm", x.detach(), w.detach(), None, dy, 1e-6)
    for g, ref, what in zip(got, refs, ("dx", "dw"), strict=True):
        close(g, ref, dt, f"rmsnorm {what}")
    s = torch.ops.tilec.softmax(x * 2, 1)
    (gx,) = torch.autograd.grad(s, (x,), dy)
    xd = x.detach().double().requires_grad_()
    (ref,) = torch.autograd.grad(torch.softmax((xd.to(dt) * 2).double(), 1), (xd,), dy.double())
    close(gx, ref, dt, "softmax dx")


@needs_gemm
@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
def test_gemm_gradients_match_torch(act: str | None) -> None:
    dt = torch.bfloat16
    a = rand(200, 512, seed=1).to(dt).requires_grad_()
    bt = (rand(512, 384, seed=2) / 16).to(dt).requires_grad_()
    bias = rand(384, seed=3).to(dt).requires_grad_()
    dy = rand(200, 384, seed=4).to(dt)
    got = torch.autograd.grad(torch.ops.tilec.gemm(a, bt, bias, act), (a, bt, bias), dy)
    leaves = [t.detach().double().requires_grad_() for t in (a, bt, bias)]
    z = leaves[0] @ leaves[1] + leaves[2]
    y = {None: z, "relu": F.relu(z), "gelu": F.gelu(z), "gelu_tanh": F.gelu(z, approximate="tanh")}
    refs = torch.autograd.grad(y[act], leaves, dy.double())
    for g, ref, what in zip(got, refs, ("da", "db", "dbias"), strict=True):
        close(g, ref, dt, f"gemm {act} {what}")


@pytest.mark.skipif(not (ROOT / "bmm" / "family.json").is_file(), reason="no bmm family")
@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_bmm_gradients_match_torch(dt: torch.dtype) -> None:
    """torch.ops.tilec.bmm and its backward (dA = dY B^T, dB = A^T dY through tilec::bmm, the
    transposed operands laid out by tilec.ops.bmm) against float64 on randn data."""
    a = rand(3, 130, 264, seed=5).to(dt).requires_grad_()
    b = (rand(3, 264, 72, seed=6) / 16).to(dt).requires_grad_()
    dy = rand(3, 130, 72, seed=7).to(dt)
    y = torch.ops.tilec.bmm(a, b)
    got = [y, *torch.autograd.grad(y, (a, b), dy)]
    leaves = [t.detach().double().requires_grad_() for t in (a, b)]
    ref = torch.bmm(*leaves)
    refs = [ref, *torch.autograd.grad(ref, leaves, dy.double())]
    for g, r, what in zip(got, refs, ("y", "da", "db"), strict=True):
        close(g, r, dt, f"bmm {what}")


def test_no_host_synchronisation() -> None:
    x = rand(64, 1000, seed=5).half().requires_grad_()
    w = torch.ones(1000, device="cuda", dtype=torch.half, requires_grad=True)

    def step() -> None:
        y = torch.ops.tilec.layernorm(x, w, w, EPS)
        y = torch.ops.tilec.softmax(torch.ops.tilec.rmsnorm(y, w, None), -1)
        torch.autograd.grad(y, (x, w), torch.ones_like(y))

    step()  # loads the kernels
    torch.cuda.set_sync_debug_mode("error")
    try:
        step()
    finally:
        torch.cuda.set_sync_debug_mode("default")


# streams -----------------------------------------------------------------------------------------


def _behind_a_sleep(stream: Any, x: torch.Tensor, src: torch.Tensor) -> None:
    """x receives src on `stream` after ~50 ms of spinning there: a kernel reading x anywhere
    but on `stream` (after it) sees its old contents."""
    with torch.cuda.stream(stream):
        torch.cuda._sleep(100_000_000)
        x.copy_(src)


def test_launches_go_to_the_current_stream_and_to_stream_arguments() -> None:
    n = 1001
    src = (rand(64, n, seed=21) + 2).half()
    w = (1 + 0.1 * rand(n, seed=22)).half()
    dy = rand(64, n, seed=23).half()
    torch.cuda.synchronize()
    refs = norm_reference("rmsnorm", src, w, None, dy, 1e-6)
    s = torch.cuda.Stream()
    # stream=: called from the default stream, launched on s behind the sleep
    x = torch.zeros_like(src)
    _behind_a_sleep(s, x, src)
    y = ops.rmsnorm(x, w, 1e-6, stream=s)
    dx, dw = backward.rmsnorm_backward(x, dy, w, 1e-6, stream=s)
    torch.cuda.synchronize()
    close(y, F.rms_norm(src.double(), (n,), w.double(), 1e-6), torch.half, "y on stream=")
    close(dx, refs[0], torch.half, "dx on stream=")
    close(dw, refs[1], torch.half, "dw on stream=")
    # torch's current stream: the operators and their autograd
    x = torch.zeros_like(src)
    _behind_a_sleep(s, x, src)
    with torch.cuda.stream(s):
        xg = x.requires_grad_()
        dx, dw = torch.autograd.grad(torch.ops.tilec.rmsnorm(xg, w.requires_grad_(), 1e-6),
                                     (xg, w), dy)  # fmt: skip
    torch.cuda.synchronize()
    close(dx, refs[0], torch.half, "dx on the current stream")
    close(dw, refs[1], torch.half, "dw on the current stream")


def test_two_streams_at_once() -> None:
    n, streams = 4096, [torch.cuda.Stream(), torch.cuda.Stream()]
    srcs = [(rand(512, n, seed=30 + i) * (i + 1)).bfloat16() for i in range(2)]
    w = (1 + 0.1 * rand(n, seed=40)).bfloat16()
    dy = rand(512, n, seed=41).bfloat16()
    torch.cuda.synchronize()
    results: list[list[Any]] = [[], []]
    for _ in range(3):  # interleaved: each stream's launches queue beside the other's
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):  # every tensor allocated on the stream that uses it
                x = torch.zeros_like(srcs[i])
            _behind_a_sleep(s, x, srcs[i])
            with torch.cuda.stream(s):
                xg, wg = x.requires_grad_(), w.clone().requires_grad_()
                y = torch.ops.tilec.layernorm(xg, wg, None, EPS)
                results[i].append([y.detach(), *torch.autograd.grad(y, (xg, wg), dy)])
    torch.cuda.synchronize()
    for i in range(2):
        ref_y = F.layer_norm(srcs[i].double(), (n,), w.double(), None, EPS)
        refs = [ref_y, *norm_reference("layernorm", srcs[i], w, w, dy, EPS)[:2]]
        for got in results[i]:
            for g, ref, what in zip(got, refs, ("y", "dx", "dw"), strict=True):
                close(g, ref, torch.bfloat16, f"stream {i} {what}")


# torch.compile, CUDA graphs, tilec.nn -------------------------------------------------------------


class Model(torch.nn.Module):
    """tilec.nn's norms and tilec::softmax around a projection `proj` (tilec.nn.Linear where
    tilec.ops has a gemm)."""

    def __init__(self, d: int, proj: torch.nn.Module) -> None:
        super().__init__()
        self.norm = tnn.LayerNorm(d)
        self.proj = proj
        self.out = tnn.RMSNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.out(x + F.gelu(self.proj(self.norm(x))))
        return torch.ops.tilec.softmax(h, -1)


def model(d: int, dt: torch.dtype, proj: torch.nn.Module) -> Model:
    torch.manual_seed(0)
    m = Model(d, proj).cuda().to(dt)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return m


def grads_of(m: torch.nn.Module, x: torch.Tensor, dy: torch.Tensor) -> list[torch.Tensor]:
    xg = x.detach().requires_grad_()
    y = m(xg)
    return [y.detach(), *torch.autograd.grad(y, (xg, *m.parameters()), dy)]


def test_compile_fullgraph_no_graph_breaks_matches_eager() -> None:
    dt = torch.bfloat16
    m = model(1000, dt, (tnn.Linear if HAS_GEMM else torch.nn.Linear)(1000, 1000))
    x, dy = rand(96, 1000, seed=50).to(dt), rand(96, 1000, seed=51).to(dt)
    eager = grads_of(m, x, dy)
    torch._dynamo.reset()
    assert torch._dynamo.explain(m)(x).graph_break_count == 0
    torch._dynamo.reset()
    compiled = torch.compile(m, fullgraph=True, backend="aot_eager")
    for got, ref in zip(grads_of(compiled, x, dy), eager, strict=True):
        close(got, ref.double(), dt, "compiled vs eager")


def test_cuda_graph_replay_equals_eager() -> None:
    dt = torch.float16
    m = model(2048, dt, tnn.Linear(2048, 2048) if HAS_GEMM else tnn.LayerNorm(2048))
    static_x, static_dy = rand(64, 2048, seed=60).to(dt), rand(64, 2048, seed=61).to(dt)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: kernels loaded, plans made, before the capture
        for _ in range(2):
            grads_of(m, static_x, static_dy)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = grads_of(m, static_x, static_dy)
    for seed in (62, 63):  # fresh data, then replay
        static_x.copy_(rand(64, 2048, seed=seed).to(dt))
        static_dy.copy_(rand(64, 2048, seed=seed + 10).to(dt))
        for t in captured:
            t.fill_(float("nan"))
        graph.replay()
        eager = grads_of(m, static_x, static_dy)
        torch.cuda.synchronize()
        for got, ref in zip(captured, eager, strict=True):
            assert torch.equal(got, ref), "a replay differs from eager"


def _pairs(d: int) -> list[tuple[torch.nn.Module, torch.nn.Module, tuple[int, ...]]]:
    """(tilec.nn module, torch's, the input's last dimensions)."""
    pairs = [
        (tnn.LayerNorm(d), torch.nn.LayerNorm(d), (d,)),
        (tnn.LayerNorm((4, d // 4), bias=False), torch.nn.LayerNorm((4, d // 4), bias=False),
         (4, d // 4)),
        (tnn.RMSNorm(d, eps=1e-6), torch.nn.RMSNorm(d, eps=1e-6), (d,)),
        (tnn.RMSNorm(d), torch.nn.RMSNorm(d), (d,)),
    ]  # fmt: skip
    if HAS_GEMM:
        pairs.append((tnn.Linear(d, 384), torch.nn.Linear(d, 384), (d,)))
    return pairs


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_nn_modules_match_torchs(dt: torch.dtype) -> None:
    d = 1024
    for ours, ref, last in _pairs(d):
        torch.manual_seed(1)
        with torch.no_grad():
            for p in ref.parameters():
                p.add_(0.1 * torch.randn_like(p))
        ours.load_state_dict(ref.state_dict())
        if isinstance(ref, torch.nn.RMSNorm) and ref.eps is None:  # the input dtype's, not f64's
            ref.eps = torch.finfo(dt).eps
        # norms keep f32 parameters (as a model under autocast would); Linear takes the input's
        ours = ours.cuda().to(dt) if isinstance(ours, tnn.Linear) else ours.cuda()
        ref = ref.cuda().double()
        x = rand(3, 50, *last, seed=70).to(dt)
        out_shape = ref(x.double()).shape
        dy = rand(*out_shape, seed=71).to(dt)
        got = grads_of(ours, x, dy)
        refs = grads_of(ref, x.double(), dy.double())
        assert [g.dtype for g in got[2:]] == [p.dtype for p in ours.parameters()]
        for g, r, what in zip(got, refs, ("y", "dx", "dw", "db"), strict=False):
            close(g, r, dt, f"{type(ours).__name__} {what}")


def _operator(ours: torch.nn.Module) -> Any:
    """A tilec.nn module's call through torch.ops.tilec (as tilec.nn did before its eager
    path), its 1-D rows' normalized_shape."""
    if isinstance(ours, tnn.Linear):
        return lambda x: torch.ops.tilec.gemm(x, ours.weight.t(), ours.bias, None)
    if isinstance(ours, tnn.LayerNorm):
        return lambda x: torch.ops.tilec.layernorm(x, ours.weight, ours.bias, ours.eps)
    return lambda x: torch.ops.tilec.rmsnorm(x, ours.weight, ours.eps)


def _step(call: Any, params: list[torch.Tensor], x: torch.Tensor, dy: torch.Tensor) -> list[Any]:
    xg = x.detach().requires_grad_()
    y = call(xg)
    return [y.detach(), *torch.autograd.grad(y, (xg, *params), dy)]


def test_nn_eager_path_equals_the_operators_on_the_current_stream_without_syncing() -> None:
    """tilec.nn's eager path (tilec.torch_eager's Functions over tilec.ops) computes what the
    operators do, bit for bit, launches on torch's current stream (behind a sleep there) and
    never synchronises the host."""
    import tilec.torch_eager as torch_eager

    d, s = 1024, torch.cuda.Stream()
    modules = [tnn.LayerNorm(d), tnn.RMSNorm(d, eps=1e-6)]
    if HAS_GEMM:
        modules.append(tnn.Linear(d, d))
    src, dy = rand(64, d, seed=80).bfloat16(), rand(64, d, seed=81).bfloat16()
    for ours in modules:
        ours = ours.cuda().to(torch.bfloat16)
        params = list(ours.parameters())
        name = type(ours).__name__
        assert torch_eager.eager(src, *params), name
        got, want = _step(ours, params, src, dy), _step(_operator(ours), params, src, dy)
        for g, w, what in zip(got, want, ("y", "dx", "dw", "db"), strict=False):
            assert torch.equal(g, w), f"{name} {what}: the eager path differs from the operator"
        x = torch.zeros_like(src)
        _behind_a_sleep(s, x, src)
        torch.cuda.set_sync_debug_mode("error")
        try:
            with torch.cuda.stream(s):
                on_s = _step(ours, params, x, dy)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()
        for g, w in zip(on_s, want, strict=True):
            assert torch.equal(g, w), f"{name}: launched off the current stream"


def test_mlp_example_tracks_torch() -> None:
    """examples/torch/mlp.py, 40 eager steps: the tilec model's losses follow torch's."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "examples" / "torch" / "mlp.py"
    spec = importlib.util.spec_from_file_location("tilec_mlp_example", path)
    assert spec is not None and spec.loader is not None
    mlp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mlp)
    ref, ours = mlp.models(torch.bfloat16)
    theirs = mlp.train(ref, ref.parameters(), 40, torch.bfloat16)
    mine = mlp.train(ours, ours.parameters(), 40, torch.bfloat16)
    assert abs(mine[0] - theirs[0]) < 0.01 * theirs[0]  # the same weights and batch
    assert sum(mine[-10:]) < 0.95 * sum(mine[:10]), "tilec's model did not learn"
    assert abs(sum(mine[-10:]) - sum(theirs[-10:])) < 0.03 * sum(theirs[-10:])
