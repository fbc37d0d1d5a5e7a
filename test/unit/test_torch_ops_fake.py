"""torch.ops.tilec.* and tilec.nn without a GPU (tilec/torch_ops.py, tilec/nn.py): the operators'
schemas, fake kernels (true shapes, strides and dtypes from metadata, bad input refused),
autograd wiring and torch.compile(fullgraph=True) tracing, all on meta tensors, which run the
fake kernels and never a real one; torch.library.opcheck on meta tensors (the real opcheck is
test/gpu/test_torch_ops.py's). Skips without torch (CI has none)."""

from __future__ import annotations

import itertools
import subprocess
import sys
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import tilec.nn as tnn  # noqa: E402  (after the skip)
import tilec.ops  # noqa: E402
import tilec.ops.backward  # noqa: E402
from tilec.torch_ops import OPS  # noqa: E402

META = {"device": "meta"}


def meta(*shape: int, dtype: Any = torch.float16, grad: bool = False) -> Any:
    return torch.empty(shape, dtype=dtype, device="meta", requires_grad=grad)


def test_import_tilec_imports_no_torch() -> None:
    code = (
        "import sys, tilec, tilec.ops, tilec.ops.backward, tilec.runtime\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_operator_is_registered_and_mutates_nothing() -> None:
    for name in OPS:
        schema = getattr(torch.ops.tilec, name).default._schema
        assert not schema.is_mutable, name
        assert all(a.alias_info is None for a in schema.arguments), name


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fake_outputs(dtype: Any) -> None:
    x = meta(3, 5, 7, dtype=dtype)
    w32 = meta(7, dtype=torch.float32)
    y = torch.ops.tilec.layernorm(x, w32, None, 1e-5)
    assert (y.shape, y.stride(), y.dtype) == (x.shape, (35, 7, 1), dtype)
    dx, dw, db = torch.ops.tilec.layernorm_backward(y, x, w32, 1e-5)
    assert (dx.shape, dx.dtype, dw.shape, dw.dtype, db.dtype) == (
        x.shape, dtype, (7,), torch.float32, torch.float32,
    )  # fmt: skip
    dx, dw = torch.ops.tilec.rmsnorm_backward(y, x, None, None)
    assert (dx.stride(), dw.shape, dw.dtype) == ((35, 7, 1), (7,), dtype)
    # softmax along dim 1: rows along that dim, contiguous (tilec.ops.softmax's layout)
    s = torch.ops.tilec.softmax(x, 1)
    assert (s.shape, s.stride()) == (x.shape, (35, 1, 5))
    assert torch.ops.tilec.softmax_backward(s, s, 1).stride() == (35, 1, 5)
    assert torch.ops.tilec.softmax(x, -1).stride() == (35, 7, 1)
    a, b = meta(9, 7, dtype=dtype), meta(7, 4, dtype=dtype)
    c = torch.ops.tilec.gemm(a, b, None, "relu")
    assert (c.shape, c.stride(), c.dtype) == ((9, 4), (4, 1), dtype)
    assert torch.ops.tilec.gemm(a, b, out_dtype=torch.float32).dtype == torch.float32
    p = torch.ops.tilec.bmm(meta(3, 9, 7, dtype=dtype), meta(3, 7, 4, dtype=dtype))
    assert (p.shape, p.stride(), p.dtype) == ((3, 9, 4), (36, 4, 1), dtype)


def test_fake_kernels_refuse_bad_input() -> None:
    x, f32, f64 = meta(4, 8), torch.float32, torch.float64
    ops = torch.ops.tilec
    cases = [
        (TypeError, "float16 or bfloat16", lambda: ops.softmax(meta(4, 8, dtype=f32), 1)),
        (ValueError, "at least one dimension", lambda: ops.rmsnorm(meta(), None, None)),
        (ValueError, "weight of shape (8,)", lambda: ops.layernorm(x, meta(7), None, 1e-5)),
        (TypeError, "bias of float16", lambda: ops.layernorm(x, None, meta(8, dtype=f64), 1e-5)),
        (ValueError, "dy of", lambda: ops.rmsnorm_backward(meta(4, 9), x, None, None)),
        (ValueError, "a (M, K) and b (K, N)", lambda: ops.gemm(x, meta(7, 3))),
        (ValueError, "a (L, M, K) and b (L, K, N)", lambda: ops.bmm(meta(2, 4, 8), meta(3, 8, 2))),
        (TypeError, "one dtype", lambda: ops.gemm(x, meta(8, 3, dtype=torch.bfloat16))),
        (ValueError, "activation", lambda: ops.gemm(x, meta(8, 3), None, "tanh")),
    ]  # fmt: skip
    for kind, text, call in cases:
        with pytest.raises(kind, match=text.replace("(", r"\(").replace(")", r"\)")):
            call()


def test_tilec_ops_take_a_stream() -> None:
    import inspect

    for fn in (tilec.ops.softmax, tilec.ops.layernorm, tilec.ops.rmsnorm, tilec.ops.gemm,
               tilec.ops.bmm, tilec.ops.attention, tilec.ops.backward.softmax_backward,
               tilec.ops.backward.layernorm_backward,
               tilec.ops.backward.rmsnorm_backward):  # fmt: skip
        stream = inspect.signature(fn).parameters["stream"]
        assert (stream.kind, stream.default) == (inspect.Parameter.KEYWORD_ONLY, None)
    with pytest.raises(TypeError, match="CUDA tensor"):  # stream=None: the current stream
        tilec.ops.softmax(torch.zeros(4, 8, dtype=torch.float16), stream=None)


def test_real_kernels_want_cuda_tensors() -> None:
    x = torch.zeros(4, 8, dtype=torch.float16)
    with pytest.raises(TypeError, match="CUDA tensor"):
        torch.ops.tilec.layernorm(x, None, None, 1e-5)
    with pytest.raises(TypeError, match="CUDA tensor"):
        torch.ops.tilec.softmax_backward(x, x, 1)
    with pytest.raises(TypeError, match="CUDA tensor"):
        tilec.ops.backward.rmsnorm_backward(x, x)


def test_gemm_wants_cuda_tensors_and_python_numbers() -> None:
    a = torch.zeros(4, 8, dtype=torch.float16)
    with pytest.raises(TypeError, match="CUDA tensor"):
        torch.ops.tilec.gemm(a, a.t())
    with pytest.raises(TypeError, match="CUDA tensor"):
        tilec.ops.bmm(a[None], a.t()[None])
    with pytest.raises(TypeError, match="out_dtype"):
        torch.ops.tilec.gemm(meta(4, 8), meta(8, 2), out_dtype=torch.float64)


def test_gemm_lays_operands_out_as_planned() -> None:
    """tilec.ops.gemm.laid_out on CPU tensors: the values kept, the planned strides made."""
    from tilec.ops.gemm import _operand, laid_out
    from tilec.ops.gemm_plan import plan, strides_after

    x = torch.randn(6, 5).half()
    assert laid_out(x, "keep", 5) is x
    c = laid_out(x.t().contiguous().t(), "contiguous", 5)  # rows round_up(K, 8) apart
    assert c.shape == (6, 5) and c.stride() == (8, 1) and torch.equal(c, x)
    t = laid_out(x, "transposed", 5)
    assert t.stride() == (1, 6) and torch.equal(t, x)
    p = laid_out(x.t().contiguous().t(), "pad", 8)
    assert p.shape == (6, 8) and p.stride() == (8, 1)
    assert torch.equal(p[:, :5], x) and not p[:, 5:].any()
    # one row is viewed, its free stride set
    row = torch.randn(1, 13).half()
    v = laid_out(row, "view", 13, "k")
    assert v.stride() == (16, 1) and v.data_ptr() == row.data_ptr() and torch.equal(v, row)
    col = torch.randn(6, 1).half()  # K = 1, MN-major: K's stride is free
    v = laid_out(col, "view", 1, "m")
    assert v.stride() == (1, 8) and v.data_ptr() == col.data_ptr() and torch.equal(v, col)
    ops_a = (torch.randn(1, 4).half(), x[:1, :4], x[:, :4])
    ops_b = (x.t()[:4], torch.randn(4, 9).half(), torch.randn(4, 8).half())
    for a, b in itertools.product(ops_a, ops_b):
        for lead in (True, False):
            pl = plan(_operand(a), _operand(b.t()), lead)
            for t, how, major in ((a, pl.a, pl.layout[0]), (b.t(), pl.b, pl.layout[1])):
                got = laid_out(t, how, pl.k, major)
                assert got.stride() == strides_after(_operand(t), how, major, pl.k), pl
                assert torch.equal(got[:, : t.shape[1]], t), pl


def _opcheck_cases() -> list[tuple[str, tuple[Any, ...]]]:
    x, w, b = meta(6, 8, grad=True), meta(8, grad=True), meta(8, grad=True)
    return [
        ("softmax", (x, 0)),
        ("softmax_backward", (x.detach(), x.detach(), 1)),
        ("layernorm", (x, w, b, 1e-5)),
        ("layernorm", (x, None, None, 1e-3)),
        ("layernorm_backward", (x.detach(), x.detach(), meta(8, dtype=torch.float32), 1e-5)),
        ("rmsnorm", (x, w, None)),
        ("rmsnorm_backward", (x.detach(), x.detach(), w.detach(), 1e-6)),
        ("gemm", (x, meta(8, 3, grad=True), meta(3, grad=True), "gelu", None)),
        ("gemm", (x, meta(8, 3, grad=True), None, "relu", torch.float32)),
        ("bmm", (meta(2, 6, 8, grad=True), meta(2, 8, 3, grad=True), None)),
        ("bmm", (meta(2, 6, 8, grad=True), meta(2, 3, 8, grad=True).transpose(1, 2), None)),
        # no autograd: inputs that need no gradient (the backward raises)
        ("attention", (meta(2, 4, 9, 64), meta(2, 2, 5, 64), meta(2, 2, 5, 64))),
        (
            "attention",
            (
                meta(1, 3, 9, 96, dtype=torch.bfloat16).transpose(1, 2),
                meta(1, 7, 3, 96, dtype=torch.bfloat16).transpose(1, 2),
                meta(1, 7, 3, 96, dtype=torch.bfloat16).transpose(1, 2),
                True,
                "bottom_right",
                0.3,
            ),
        ),  # fmt: skip
    ]


@pytest.mark.parametrize("case", range(len(_opcheck_cases())))
def test_opcheck_on_meta_tensors(case: int) -> None:
    name, args = _opcheck_cases()[case]
    results = torch.library.opcheck(getattr(torch.ops.tilec, name), args)
    assert set(results.values()) == {"SUCCESS"}, results


def test_gradients_have_the_inputs_shapes_and_dtypes() -> None:
    x = meta(5, 8, dtype=torch.bfloat16, grad=True)
    w = meta(8, dtype=torch.float32, grad=True)
    b = meta(8, dtype=torch.bfloat16, grad=True)
    y = torch.ops.tilec.layernorm(x, w, b, 1e-5)
    gx, gw, gb = torch.autograd.grad(y.sum(), (x, w, b))
    assert [(g.shape, g.dtype) for g in (gx, gw, gb)] == [
        (x.shape, torch.bfloat16), ((8,), torch.float32), ((8,), torch.bfloat16)
    ]  # fmt: skip
    (gx,) = torch.autograd.grad(torch.ops.tilec.rmsnorm(x, None, None).sum(), (x,))
    assert gx.shape == x.shape
    a, bt = meta(5, 8, grad=True), meta(8, 3, grad=True)
    bias = meta(3, grad=True)
    for act in ("relu", "gelu", "gelu_tanh", None):
        y = torch.ops.tilec.gemm(a, bt, bias, act)
        grads = torch.autograd.grad(y.sum(), (a, bt, bias))
        assert [g.shape for g in grads] == [a.shape, bt.shape, bias.shape]


class Block(torch.nn.Module):
    """Every tilec.nn module and tilec::softmax, as a model would hold them."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = tnn.LayerNorm(d)
        self.up = tnn.Linear(d, 2 * d, activation="gelu")
        self.down = tnn.Linear(2 * d, d)
        self.out = tnn.RMSNorm(d)

    def forward(self, x: Any) -> Any:
        h = x + self.down(self.up(self.norm(x)))
        return torch.ops.tilec.softmax(self.out(h), -1)


def test_compile_fullgraph_has_no_graph_break_and_traces_the_backward() -> None:
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    graphs: list[set[str]] = []

    def record(gm: Any, _: Any) -> Any:
        graphs.append({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})
        return make_boxed_func(gm.forward)

    model = Block(16).to(device="meta", dtype=torch.float16)
    x = meta(4, 16, grad=True)
    assert torch._dynamo.explain(model)(x).graph_break_count == 0
    torch._dynamo.reset()
    backend = aot_autograd(fw_compiler=record, bw_compiler=record)
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    compiled(x).sum().backward()
    forward, backward = graphs
    assert {f"tilec.{op}.default" for op in ("layernorm", "gemm", "rmsnorm", "softmax")} <= forward
    names = ("layernorm_backward", "rmsnorm_backward", "softmax_backward", "gemm")
    assert {f"tilec.{op}.default" for op in names} <= backward
    assert x.grad is not None and x.grad.shape == x.shape


def test_modules_are_torchs_drop_ins() -> None:
    pairs = [
        (torch.nn.Linear(8, 4), tnn.Linear(8, 4)),
        (torch.nn.Linear(8, 4, bias=False), tnn.Linear(8, 4, bias=False)),
        (torch.nn.LayerNorm((2, 8)), tnn.LayerNorm((2, 8))),
        (torch.nn.LayerNorm(8, 1e-3, False), tnn.LayerNorm(8, 1e-3, False)),
        (torch.nn.LayerNorm(8, bias=False), tnn.LayerNorm(8, bias=False)),
        (torch.nn.RMSNorm(8, eps=1e-6), tnn.RMSNorm(8, eps=1e-6)),
    ]  # fmt: skip
    for ref, ours in pairs:
        assert ours.state_dict().keys() == ref.state_dict().keys()
        ref_state = {k: torch.randn_like(v) for k, v in ref.state_dict().items()}
        ours.load_state_dict(ref_state)
        ref.load_state_dict(ours.state_dict())
        for k, v in ref.state_dict().items():
            assert torch.equal(v, ref_state[k])
        assert repr(ours).split("(", 1)[1] == repr(ref).split("(", 1)[1]
    assert "activation='relu'" in repr(tnn.Linear(8, 4, activation="relu"))
    with pytest.raises(ValueError, match="activation"):
        tnn.Linear(8, 4, activation="swish")


def test_modules_keep_their_inputs_shapes() -> None:
    x = meta(2, 3, 2, 8)
    assert tnn.LayerNorm((2, 8)).to(**META, dtype=torch.float16)(x).shape == x.shape
    assert tnn.RMSNorm(8).to(**META, dtype=torch.float16)(x).shape == x.shape
    assert tnn.Linear(8, 5).to(**META, dtype=torch.float16)(x).shape == (2, 3, 2, 5)
    with pytest.raises(ValueError, match="last dimensions"):
        tnn.LayerNorm((3, 8)).to(**META, dtype=torch.float16)(x)


# attention ------------------------------------------------------------------------------------


def test_attention_fake_outputs() -> None:
    q, k = meta(2, 8, 9, 128, dtype=torch.bfloat16), meta(2, 2, 5, 128, dtype=torch.bfloat16)
    o, lse = torch.ops.tilec.attention(q, k, k)
    assert (o.shape, o.stride(), o.dtype) == (q.shape, (9216, 1152, 128, 1), torch.bfloat16)
    assert (lse.shape, lse.stride(), lse.dtype) == ((2, 8, 9), (72, 9, 1), torch.float32)
    # (B, S, H, D) memory seen as (B, H, S, D): O laid out as q
    qt = meta(2, 9, 8, 64).transpose(1, 2)
    kt = meta(2, 5, 2, 64).transpose(1, 2)
    o, lse = torch.ops.tilec.attention(qt, kt, kt, True, "bottom_right", 0.5)
    assert (o.shape, o.stride()) == ((2, 8, 9, 64), (4608, 64, 512, 1))
    assert lse.stride() == (72, 9, 1)
    # D not contiguous (copied by the real call): O contiguous
    kv = meta(1, 1, 4, 256)
    o, _ = torch.ops.tilec.attention(meta(1, 2, 256, 3).transpose(2, 3), kv, kv)
    assert o.stride() == (1536, 768, 256, 1)
    # empty sizes
    o, lse = torch.ops.tilec.attention(meta(0, 2, 3, 64), meta(0, 1, 4, 64), meta(0, 1, 4, 64))
    assert o.shape == (0, 2, 3, 64) and lse.shape == (0, 2, 3)


def test_attention_refuses_bad_input() -> None:
    att, ops = torch.ops.tilec.attention, tilec.ops
    q, k = meta(1, 4, 8, 64), meta(1, 2, 8, 64)
    cases = [
        (ValueError, "head dim D = 80 is not supported: D is one of 64, 96, 128, 256",
         lambda: att(meta(1, 4, 8, 80), meta(1, 2, 8, 80), meta(1, 2, 8, 80))),
        (ValueError, "multiple of k's and v's 3", lambda: att(q, meta(1, 3, 8, 64),
                                                               meta(1, 3, 8, 64))),
        (ValueError, "k and v of", lambda: att(q, k, meta(1, 2, 9, 64))),
        (ValueError, "k and v of", lambda: att(q, meta(2, 2, 8, 64), meta(2, 2, 8, 64))),
        (ValueError, "q of rank 4", lambda: att(meta(4, 8, 64), k, k)),
        (TypeError, "one dtype", lambda: att(q, k, meta(1, 2, 8, 64, dtype=torch.bfloat16))),
        (TypeError, "k of float16 or bfloat16", lambda: att(q, k.float(), k)),
        (ValueError, "causal_alignment one of", lambda: att(q, k, k, True, "lower_right")),
        (ValueError, "scale must be finite and > 0", lambda: att(q, k, k, False, "top_left",
                                                                  -1.0)),
        (TypeError, "CUDA tensor", lambda: ops.attention(*(torch.zeros(1, 2, 8, 64).half(),) * 3)),
        (TypeError, "v must be a torch.Tensor", lambda: ops.attention(q, k, None)),
    ]  # fmt: skip
    for kind, text, call in cases:
        with pytest.raises(kind, match=text.replace("(", r"\(").replace(")", r"\)")):
            call()


def test_attention_backward_raises() -> None:
    q, k = meta(1, 4, 8, 64, grad=True), meta(1, 2, 8, 64, grad=True)
    o, lse = torch.ops.tilec.attention(q, k, k)
    assert o.requires_grad
    with pytest.raises(NotImplementedError, match="no backward yet"):
        o.sum().backward()
    with pytest.raises(NotImplementedError, match="no backward yet"):
        torch.autograd.grad(lse.sum(), (q,))
    with torch.no_grad():
        assert not torch.ops.tilec.attention(q, k, k)[0].requires_grad


def test_attention_compiles_without_graph_breaks() -> None:
    def block(q: Any, k: Any, v: Any) -> Any:
        o, lse = torch.ops.tilec.attention(q, k, v, True, "top_left", None)
        return o.transpose(1, 2).flatten(2) * 2, lse

    q, k = meta(2, 8, 16, 64), meta(2, 2, 16, 64)
    assert torch._dynamo.explain(block)(q, k, k).graph_break_count == 0
    torch._dynamo.reset()
    o, lse = torch.compile(block, fullgraph=True, backend="aot_eager")(q, k, k)
    assert o.shape == (2, 16, 512) and lse.shape == (2, 8, 16)
    # inputs that need gradients: AOT autograd traces the backward, which raises
    torch._dynamo.reset()
    qg = meta(2, 8, 16, 64, grad=True)
    with pytest.raises(Exception, match="no backward yet"):
        torch.compile(block, fullgraph=True, backend="aot_eager")(qg, k, k)


@pytest.mark.parametrize(
    "make",
    [
        lambda: tnn.LayerNorm(8),
        lambda: tnn.LayerNorm((2, 4)),
        lambda: tnn.LayerNorm(8, bias=False),
        lambda: tnn.RMSNorm(8),
        lambda: tnn.Linear(8, 3),
    ],
    ids=["layernorm", "layernorm_2d", "layernorm_nobias", "rmsnorm", "linear"],
)
def test_nn_modules_pass_their_parameters_to_the_operators(make: Any) -> None:
    """Every parameter of a tilec.nn module reaches its operator, so autograd gives each a
    gradient (a weight left out of the call is 'not used in the graph'), on meta tensors."""
    m = make().to(device="meta", dtype=torch.float16)
    x = meta(5, 2, 4, grad=True) if tuple(getattr(m, "normalized_shape", ())) == (2, 4) else None
    x = meta(5, 8, grad=True) if x is None else x
    y = m(x)
    grads = torch.autograd.grad(y, (x, *m.parameters()), torch.empty_like(y))
    assert [g.shape for g in grads] == [x.shape, *(p.shape for p in m.parameters())]
