"""GPU tier: tilec.ops' planned row calls (tilec/ops/planned.py) against float64 torch. Each
case is called three times on fresh data in fresh memory (NaN left where the outputs will be
allocated): the first plans, the repeats must launch as planned and still match, through the
copies the first call made (a strided x, an f32 weight) and the constants it read (absent
vectors). Needs the row and backward families, as test_torch_ops.py does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402
from test_torch_ops import DTYPES, IDS, close, norm_reference, rand  # noqa: E402

import tilec.nn as tnn  # noqa: E402
import tilec.ops as ops  # noqa: E402
from tilec.ops import backward  # noqa: E402


def poison(like: torch.Tensor) -> None:
    """NaN in the blocks torch's caching allocator hands out next (the planned outputs)."""
    block = torch.full((like.numel() * 4 + 4096,), float("nan"), device="cuda")
    del block


@contextmanager
def planned_hits() -> Iterator[list[bool]]:
    """Whether each tilec.ops / backward call found a plan, in order."""
    hits: list[bool] = []
    tables = (ops.PLANNED, backward.PLANNED)
    for table in tables:
        run = table.run
        table.run = lambda *a, run=run: hits.append((found := run(*a)) is not None) or found
    try:
        yield hits
    finally:
        for table in tables:
            del table.run  # the method again


def forward_cases(dt: torch.dtype) -> list[tuple[str, Callable[[int], tuple[Any, Any]]]]:
    """(what, seed -> (tilec's output, float64 reference)) for the forward ops."""

    def softmax(shape: tuple[int, ...], cut: int | None = None) -> Callable[[int], Any]:
        def case(seed: int) -> tuple[Any, Any]:
            x = (rand(*shape, seed=seed) * 4).to(dt)
            x = x if cut is None else x[..., :cut]  # a strided x: copied row-major each call
            poison(x)
            return ops.softmax(x), torch.softmax(x.double(), -1)

        return case

    def norm(op: str, shape: tuple[int, ...], vectors: bool, wdtype: Any = dt) -> Any:
        def case(seed: int) -> tuple[Any, Any]:
            n = shape[-1]
            x = (rand(*shape, seed=seed) * 2 + 1).to(dt)
            w = (1 + 0.1 * rand(n, seed=seed + 1)).to(wdtype) if vectors else None
            b = (0.1 * rand(n, seed=seed + 2)).to(dt) if vectors else None
            wd = None if w is None else w.to(dt).double()
            poison(x)
            if op == "layernorm":
                ref = F.layer_norm(x.double(), (n,), wd, None if b is None else b.double())
                return ops.layernorm(x, w, b), ref
            eps = torch.finfo(dt).eps
            return ops.rmsnorm(x, w), F.rms_norm(x.double(), (n,), wd, eps)

        return case

    return [
        ("softmax 37 x 1001", softmax((37, 1001))),
        ("softmax strided", softmax((37, 1024), 1000)),
        ("layernorm 2 x 37 x 4096", norm("layernorm", (2, 37, 4096), True)),
        ("layernorm no vectors", norm("layernorm", (37, 1001), False)),
        ("rmsnorm 37 x 4096", norm("rmsnorm", (37, 4096), True)),
        ("rmsnorm f32 weight", norm("rmsnorm", (37, 3001), True, torch.float32)),
    ]


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_planned_forward_calls_match_torch_on_fresh_operands(dt: torch.dtype) -> None:
    with planned_hits() as hits:
        for what, case in forward_cases(dt):
            for seed in (10, 20, 30):
                close(*case(seed), dt, f"{what}, seed {seed}")
            assert hits[-2:] == [True, True], f"{what}: the repeats were not planned"


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("n", [1001, 4096])
def test_planned_norm_backward_matches_torch_on_fresh_operands(
    op: str, n: int, dt: torch.dtype
) -> None:
    call = getattr(backward, f"{op}_backward")
    with planned_hits() as hits:
        for wdtype in (dt, torch.float32):
            for seed in (40, 50, 60):
                x = (rand(37, n, seed=seed) + 1).to(dt)
                w = (1 + 0.1 * rand(n, seed=seed + 1)).to(wdtype)
                dy = rand(37, n, seed=seed + 2).to(dt)
                poison(x)
                got = call(x, dy, w, 1e-5)
                refs = norm_reference(op, x, w.to(dt), torch.zeros_like(w), dy, 1e-5)
                for g, ref, what in zip(got, refs, ("dx", "dw", "db"), strict=False):
                    close(g, ref, dt, f"{op} {what}, weight {wdtype}, seed {seed}")
                assert got[1].dtype == wdtype
            assert hits[-2:] == [True, True], f"{op}: the repeats were not planned"


@pytest.mark.parametrize("module", ["LayerNorm", "RMSNorm"])
def test_eager_norm_steps_repeat_as_planned_and_match_torch(module: str) -> None:
    """tilec.nn's eager forward + backward, three steps on fresh inputs: the backward's rows
    launch and colsum planned after the first, its gradients torch's module's."""
    dt, n = torch.bfloat16, 4096
    ours = getattr(tnn, module)(n).cuda().to(dt)
    theirs = getattr(torch.nn, module)(n).cuda().to(dt)
    theirs.load_state_dict(ours.state_dict())
    with planned_hits() as hits:
        for seed in (70, 80, 90):
            x = rand(64, n, seed=seed).to(dt).requires_grad_()
            dy = rand(64, n, seed=seed + 1).to(dt)
            poison(x)
            got = torch.autograd.grad(ours(x), (x, *ours.parameters()), dy)
            want = torch.autograd.grad(theirs(x), (x, *theirs.parameters()), dy)
            for g, w in zip(got, want, strict=True):
                close(g, w.double(), dt, f"{module} seed {seed}")
    assert hits[-2:] == [True, True], "the last step's forward and backward were not planned"
