"""tilec.torch_eager (tilec.nn's eager path) without a GPU: CPU tensors stand in for CUDA ones
and the families are CPU stand-ins computing the kernels' results with torch, so the eager
Functions and the `torch.ops.tilec.*` operators run the same tilec.ops code; their outputs and
gradients must agree with each other and with torch's, and whatever traces or intercepts
torch's calls must still see the operators. Skips without torch (CI has none)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402  (after the skip)

import tilec.nn as tnn  # noqa: E402
import tilec.ops  # noqa: E402
import tilec.ops.backward  # noqa: E402
import tilec.torch_eager as torch_eager  # noqa: E402

GEMM = sys.modules["tilec.ops.gemm"]


def _layernorm(x: Any, w: Any, b: Any, y: Any, eps: float) -> None:
    y.copy_(F.layer_norm(x.float(), x.shape[-1:], w[0].float(), b[0].float(), eps))


def _rmsnorm(x: Any, w: Any, y: Any, eps: float) -> None:
    y.copy_(F.rms_norm(x.float(), x.shape[-1:], w[0].float(), eps))


def _norm_bwd(op: str, x: Any, w: Any, dy: Any, dx: Any, *partials_eps: Any) -> None:
    """dx, and the whole column sums in the first partial row (the others zero)."""
    *partials, eps = partials_eps
    assert all(p.is_contiguous() and p.data_ptr() % 16 == 0 for p in partials)  # as bound
    x, g = x.float(), dy.float()
    centred = x if op == "rms" else x - x.mean(-1, keepdim=True)
    rstd = torch.rsqrt((centred * centred).mean(-1, keepdim=True) + eps)
    xhat, gw = centred * rstd, g * w[0].float()
    mean_gw = 0 if op == "rms" else gw.mean(-1, keepdim=True)
    dx.copy_(rstd * (gw - mean_gw - xhat * (gw * xhat).mean(-1, keepdim=True)))
    for p, s in zip(partials, ((g * xhat).sum(0), g.sum(0)), strict=False):
        p.zero_()
        p[0] = s


def _colsum(p: Any, y: Any) -> None:
    y.copy_(p.sum(1))  # each batch's G rows


def _gemm(a: Any, bt: Any, c: Any, *rest: Any) -> None:
    c.copy_(a.float() @ bt.float().t())


def _gemm_bias(act: str | None) -> Any:
    def run(a: Any, bt: Any, out: Any, bias: Any, alpha: float, beta: float) -> None:
        z = alpha * (a.float() @ bt.float().t()) + bias.float()
        out.copy_(z if act is None else torch.relu(z) if act == "relu" else F.gelu(z))

    return run


FAMILIES = {
    "layernorm": _layernorm,
    "rmsnorm": _rmsnorm,
    "layernorm_bwd": lambda *a: _norm_bwd("ln", *a),
    "rmsnorm_bwd": lambda *a: _norm_bwd("rms", *a),
    "colsum": _colsum,
    "gemm": _gemm,
    "gemm_bias": _gemm_bias(None),
    "gemm_bias_relu": _gemm_bias("relu"),
    "gemm_bias_gelu": _gemm_bias("gelu"),
}


@pytest.fixture
def cpu_kernels(monkeypatch: Any) -> list[str]:
    """tilec.ops on CPU tensors: the families stood in for (each call's name recorded), the
    CUDA check passed, an H100's SM count and arch; torch_eager takes CPU tensors as CUDA."""
    calls: list[str] = []

    def family(name: str) -> Any:
        def run(*args: Any) -> None:
            calls.append(name)
            FAMILIES[name](*args)

        run.launch = lambda *args: None  # type: ignore[attr-defined]  # no planned launch:
        return run  # each call computes (tilec/ops/planned.py keeps none)

    for module in (tilec.ops, tilec.ops.backward, GEMM):
        monkeypatch.setattr(module, "family", family)
        monkeypatch.setattr(module, "_check", lambda op, x: torch)
    monkeypatch.setattr(tilec.ops.backward, "_num_sms", lambda device: 132)
    monkeypatch.setattr(GEMM, "_arch", lambda device: "sm_90")
    monkeypatch.setattr(torch_eager, "_on_device", lambda t: t.device.type == "cpu")
    return calls


def _leaves(*shapes: tuple[int, ...], dtype: Any = torch.bfloat16) -> list[Any]:
    torch.manual_seed(0)
    return [torch.randn(s, dtype=dtype).requires_grad_() for s in shapes]


def _run(fn: Any, leaves: list[Any], dy: Any) -> list[Any]:
    y = fn(*leaves)
    return [y, *torch.autograd.grad(y, [t for t in leaves if t is not None], dy)]


CASES = {
    "layernorm": (lambda x, w, b: torch_eager.layernorm(x, w, b, 1e-5),
                  lambda x, w, b: torch.ops.tilec.layernorm(x, w, b, 1e-5),
                  lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b, 1e-5)),
    "rmsnorm": (lambda x, w: torch_eager.rmsnorm(x, w, None),
                lambda x, w: torch.ops.tilec.rmsnorm(x, w, None),
                lambda x, w: F.rms_norm(x, x.shape[-1:], w)),
    "gemm": (lambda a, b, bias: torch_eager.gemm(a, b, bias, "relu"),
             lambda a, b, bias: torch.ops.tilec.gemm(a, b, bias, "relu"),
             lambda a, b, bias: torch.relu(a @ b + bias)),
}  # fmt: skip
SHAPES = {"layernorm": [(6, 32), (32,), (32,)], "rmsnorm": [(6, 32), (32,)],
          "gemm": [(6, 32), (32, 16), (16,)]}  # fmt: skip


@pytest.mark.parametrize("op", CASES)
def test_eager_functions_match_the_operators(op: str, cpu_kernels: list[str]) -> None:
    eager, operator, reference = CASES[op]
    leaves = _leaves(*SHAPES[op])
    dy = torch.randn(leaves[0].shape[0], SHAPES[op][1][-1], dtype=torch.bfloat16)
    got = _run(eager, leaves, dy)
    assert "GeneratedBackwardFor" not in type(got[0].grad_fn).__name__  # the Function's
    want = _run(operator, leaves, dy)
    assert "GeneratedBackwardFor" in type(want[0].grad_fn).__name__
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and g.stride() == w.stride()
        assert torch.equal(g, w)
    ref = _run(reference, [t.detach().double().requires_grad_() for t in leaves], dy.double())
    for g, r in zip(got, ref, strict=True):
        torch.testing.assert_close(g.double(), r, atol=0.1, rtol=0.05)


def test_norm_gradients_keep_their_parameters_dtypes(cpu_kernels: list[str]) -> None:
    x, w, b = _leaves((4, 16), (16,), (16,))
    w32 = w.detach().float().requires_grad_()
    y = torch_eager.layernorm(x, w32, b, 1e-5)
    grads = torch.autograd.grad(y, (x, w32, b), torch.ones_like(y))
    assert [g.dtype for g in grads] == [torch.bfloat16, torch.float32, torch.bfloat16]
    (gx,) = torch.autograd.grad(torch_eager.layernorm(x, None, None, 1e-5).sum(), (x,))
    assert gx.shape == x.shape
    assert cpu_kernels.count("colsum") == 2  # dw and db together, each call


def test_the_eager_backward_calls_tilec_ops(cpu_kernels: list[str]) -> None:
    x, w = _leaves((4, 16), (16,))
    y = torch_eager.rmsnorm(x, w, None)
    assert cpu_kernels == ["rmsnorm"]
    torch.autograd.grad(y, (x, w), torch.ones_like(y))
    assert cpu_kernels == ["rmsnorm", "rmsnorm_bwd", "colsum"]


def test_layernorm_sums_dw_and_db_in_one_launch(cpu_kernels: list[str]) -> None:
    """The eager backward: one colsum for dw and db (two rows of one tensor); the operator's:
    one each, as its outputs may not alias. Rows of 7 (G * N = 35): the partial sums' second
    batch padded to 16 bytes (the stand-in checks), the gradients still right."""
    x, w, b = _leaves((5, 7), (7,), (7,))
    dy = torch.randn(5, 7, dtype=torch.bfloat16)
    got = _run(CASES["layernorm"][0], [x, w, b], dy)
    assert cpu_kernels == ["layernorm", "layernorm_bwd", "colsum"]
    del cpu_kernels[:]
    want = _run(CASES["layernorm"][1], [x, w, b], dy)
    assert cpu_kernels == ["layernorm", "layernorm_bwd", "colsum", "colsum"]
    for g, o in zip(got, want, strict=True):
        assert torch.equal(g, o)
    dw, db = want[2:]
    assert dw.untyped_storage().data_ptr() != db.untyped_storage().data_ptr()
    ref = _run(CASES["layernorm"][2], [t.detach().double().requires_grad_() for t in (x, w, b)],
               dy.double())  # fmt: skip
    for g, r in zip(got, ref, strict=True):
        torch.testing.assert_close(g.double(), r, atol=0.1, rtol=0.05)


def test_a_second_derivative_is_refused_as_the_operators_refuse_it(cpu_kernels: list[str]) -> None:
    for fn in (CASES["layernorm"][0], CASES["layernorm"][1]):
        x, w, b = _leaves((4, 16), (16,), (16,))
        y = fn(x, w, b)
        (gx,) = torch.autograd.grad(y, (x,), torch.ones_like(y), create_graph=True)
        with pytest.raises(RuntimeError, match="no autograd formula was registered"):
            gx.sum().backward()


class Recorder(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_what_intercepts_torch_sees_the_operators(cpu_kernels: list[str]) -> None:
    m = tnn.LayerNorm(16).to(torch.bfloat16)
    x = torch.randn(4, 16, dtype=torch.bfloat16)
    assert torch_eager.eager(x, m.weight, None)
    with Recorder() as mode:
        m(x)
    assert "tilec.layernorm.default" in mode.ops
    with torch.overrides.TorchFunctionMode():
        assert not torch_eager.eager(x)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as fake:
        assert not torch_eager.eager(fake.from_tensor(x))
    assert not torch_eager.eager(x.to("meta"))
    assert not torch_eager.eager(x, torch.nn.Buffer(x).as_subclass(Subclass))


class Subclass(torch.Tensor):
    pass


def test_compile_traces_the_operators(cpu_kernels: list[str]) -> None:
    """Under torch.compile the modules call the operators even where the eager path would
    take the tensors (a Function's insides would be traced instead)."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    graphs: list[set[str]] = []

    def record(gm: Any, _: Any) -> Any:
        graphs.append({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})
        return make_boxed_func(gm.forward)

    model = torch.nn.Sequential(tnn.LayerNorm(16), tnn.Linear(16, 16), tnn.RMSNorm(16))
    model = model.to(torch.bfloat16)
    x = torch.randn(4, 16, dtype=torch.bfloat16, requires_grad=True)
    torch._dynamo.reset()
    backend = aot_autograd(fw_compiler=record, bw_compiler=record)
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    compiled(x).sum().backward()
    forward, backward = graphs
    assert {f"tilec.{op}.default" for op in ("layernorm", "gemm", "rmsnorm")} <= forward
    assert {"tilec.layernorm_backward.default", "tilec.rmsnorm_backward.default"} <= backward


def test_modules_refuse_cpu_tensors_without_the_stand_in() -> None:
    x = torch.zeros(4, 8, dtype=torch.float16)
    for m in (tnn.LayerNorm(8), tnn.RMSNorm(8), tnn.Linear(8, 8)):
        with pytest.raises(TypeError, match="CUDA tensor"):
            m.to(torch.float16)(x)


def test_the_planned_key_of_torch_tensors() -> None:
    """runtime.signature.Signer (a kernel's and a family's planned-call key) on torch tensors:
    the same for new pointers of the same alignment, another for any other shape, stride,
    dtype or alignment; a keyed integer scalar counts by value, a float one by type."""
    from tilec.runtime.bundle import ScalarParam, TensorParam
    from tilec.runtime.signature import Signer, signature

    params = [TensorParam("X", "f16", ()), ScalarParam("eps", "f32"), ScalarParam("n", "i32")]
    sign = Signer(params, frozenset({"n"}))
    base = torch.zeros(64, dtype=torch.float16)
    x = base[:32].view(4, 8)
    key, ptrs, _ = sign((x, 1e-5, 3))
    assert ptrs == [x.data_ptr(), 0, 0] and signature(params, (x, 1e-5, 3), {"n"})[0] == key
    assert sign((base[32:].view(4, 8), 0.5, 3))[0] == key  # 64 bytes on: aligned alike
    assert sign((torch.nn.Parameter(x), 1e-5, 3))[0] == key
    others = [
        base[1:33].view(4, 8),  # 2 bytes on: not 16-byte aligned
        torch.zeros(8, 4, dtype=torch.float16).t(),  # strides (1, 4)
        x.view(8, 4),
        x.to(torch.bfloat16),
    ]
    assert len({key, *(sign((t, 1e-5, 3))[0] for t in others)}) == 1 + len(others)
    assert sign((x, 1e-5, 4))[0] != key and sign((x, 1, 3))[0] != key
    assert sign((x, 1e-5))[0] == ()  # a wrong argument count: not planned


def test_no_grad_and_inference_mode(cpu_kernels: list[str]) -> None:
    x, w, b = _leaves((4, 16), (16,), (16,))
    want = torch.ops.tilec.layernorm(x, w, b, 1e-5).detach()
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            y = torch_eager.layernorm(x, w, b, 1e-5)
        assert not y.requires_grad and y.grad_fn is None and torch.equal(y, want)
    with torch.inference_mode():
        assert torch_eager.layernorm(x, w, b, 1e-5).is_inference()


@pytest.mark.parametrize("reentrant", [False, True])
def test_activation_checkpointing(reentrant: bool, cpu_kernels: list[str]) -> None:
    """torch.utils.checkpoint recomputes the forward in the backward: the same gradients."""
    from torch.utils.checkpoint import checkpoint

    m = torch.nn.Sequential(tnn.LayerNorm(16), tnn.Linear(16, 16), tnn.RMSNorm(16))
    m = m.to(torch.bfloat16)
    x = torch.randn(4, 16, dtype=torch.bfloat16, requires_grad=True)
    leaves = (x, *m.parameters())
    grads = []
    for run in (m, lambda x: checkpoint(m, x, use_reentrant=reentrant)):
        run(x).sum().backward()  # reentrant checkpointing takes no autograd.grad
        grads.append([t.grad.clone() for t in leaves])
        for t in leaves:
            t.grad = None
    for g, w in zip(*grads, strict=True):
        assert torch.equal(g, w)
