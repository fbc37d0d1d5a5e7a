"""GPU tier: tilec.ops.softmax, layernorm and rmsnorm against float64 torch, through their
families, over row lengths that land in every rule the device can run (each build chosen at
least once, checked at the end), f16 and bf16, even and odd N, fresh randn inputs and
NaN-poisoned outputs.

Families: `bash test/gpu/build_torch_families.sh` (each op's spec with its tuning tables from
tilec/ops/tuning), on a machine with MLIR (or $TILEC_FAMILIES); this file needs only the
runtime, torch and a GPU.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import tilec.ops as ops  # noqa: E402  (after the skips)
from tilec.runtime.family import FAMILY_FILE, device_arch  # noqa: E402
from tilec.runtime.formula import all_hold  # noqa: E402

ROOT = Path(
    os.environ.get("TILEC_FAMILIES", Path(__file__).resolve().parents[2] / "build/families")
)
OPS = ("softmax", "layernorm", "rmsnorm")
if not all((ROOT / op / FAMILY_FILE).is_file() for op in OPS):
    pytest.skip(f"no families in {ROOT} (tilec family build --op OP)", allow_module_level=True)
os.environ.setdefault("TILEC_FAMILIES", str(ROOT))

# One N in each bucket of tilec/ops/specs.py, and either side of each edge (odd ones too).
NS = [1, 7, 100, 256, 300, 511, 512, 1000, 1001, 2000, 2047, 4001, 4096, 8000, 8191, 12288,
      12289, 16384, 20000, 20001, 32768, 40000, 40001, 100000, 100001, 131073, 131080]  # fmt: skip
DTYPES = (torch.float16, torch.bfloat16)
CHOSEN: dict[str, set[str]] = defaultdict(set)  # op -> builds launched


def rand(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g)


def rows_for(n: int) -> int:
    return 3 if n > 16384 else 37


def rel_err(y: torch.Tensor, ref: torch.Tensor) -> float:
    return ((y.double() - ref).norm() / ref.norm()).item()


def tol(dt: torch.dtype) -> float:
    return 1e-2 if dt == torch.bfloat16 else 3e-3


def launch(op: str, *args: object) -> None:
    """The op's family on `args` (its output NaN-poisoned by the caller), noting the build."""
    fam = ops.family(op)
    CHOSEN[op].add(fam.select(*args))
    fam(*args)
    torch.cuda.synchronize()


@pytest.mark.parametrize("dt", DTYPES, ids=("f16", "bf16"))
@pytest.mark.parametrize("n", NS)
def test_softmax(n: int, dt: torch.dtype) -> None:
    r = rows_for(n)
    x = (rand(r, n, seed=n) * 4).to(dt)
    y = torch.full_like(x, float("nan"))
    launch("softmax", x, y)
    ref = torch.softmax(x.double(), dim=1)
    assert not torch.isnan(y).any(), "unwritten or NaN outputs"
    assert rel_err(y, ref) < tol(dt)


@pytest.mark.parametrize("dt", DTYPES, ids=("f16", "bf16"))
@pytest.mark.parametrize("n", NS)
def test_layernorm(n: int, dt: torch.dtype) -> None:
    r = rows_for(n)
    x = (rand(r, n, seed=n) * 2 + 3).to(dt)  # an offset mean: cancellation would show
    w = (1 + 0.1 * rand(n, seed=n + 1)).to(dt)
    b = (0.1 * rand(n, seed=n + 2)).to(dt)
    y = torch.full_like(x, float("nan"))
    launch("layernorm", x, w.expand(r, n), b.expand(r, n), y, 1e-5)
    ref = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
    assert not torch.isnan(y).any(), "unwritten or NaN outputs"
    assert rel_err(y, ref) < tol(dt)


@pytest.mark.parametrize("dt", DTYPES, ids=("f16", "bf16"))
@pytest.mark.parametrize("n", NS)
def test_rmsnorm(n: int, dt: torch.dtype) -> None:
    r = rows_for(n)
    x = (rand(r, n, seed=n) * 2 + 1).to(dt)
    w = (1 + 0.1 * rand(n, seed=n + 1)).to(dt)
    y = torch.full_like(x, float("nan"))
    launch("rmsnorm", x, w.expand(r, n), y, 1e-6)
    ref = torch.nn.functional.rms_norm(x.double(), (n,), w.double(), 1e-6)
    assert not torch.isnan(y).any(), "unwritten or NaN outputs"
    assert rel_err(y, ref) < tol(dt)


def test_the_op_api_matches_torch() -> None:
    x = rand(5, 6, 1001, seed=1).half()
    for dim in (-1, 0, 1):
        assert rel_err(ops.softmax(x, dim=dim), torch.softmax(x.double(), dim=dim)) < 3e-3
    w, b = rand(1001, seed=2).half(), rand(1001, seed=3).half()
    ref = torch.nn.functional.layer_norm(x.double(), (1001,), w.double(), b.double(), 1e-5)
    assert rel_err(ops.layernorm(x, w, b), ref) < 3e-3
    plain = torch.nn.functional.layer_norm(x.double(), (1001,), None, None, 1e-5)
    assert rel_err(ops.layernorm(x), plain) < 3e-3
    eps = torch.finfo(torch.float16).eps
    assert (
        rel_err(
            ops.rmsnorm(x, w), torch.nn.functional.rms_norm(x.double(), (1001,), w.double(), eps)
        )
        < 3e-3
    )
    sliced = x[:, :, 1:]  # not 16-byte aligned, not contiguous: the op copies it
    assert rel_err(ops.softmax(sliced), torch.softmax(sliced.double(), -1)) < 3e-3
    with pytest.raises(TypeError, match="float16 or bfloat16"):
        ops.softmax(x.float())
    with pytest.raises(ValueError, match=r"weight of shape \(1001,\) expected"):
        ops.layernorm(x, w[:10])


def test_every_rule_was_exercised() -> None:
    """Each build that a rule for this device's own target names (sm_90a on SM 9.0: the sm_80
    rules behind them are for older GPUs) ran in the tests above."""
    own = "sm_90a" if device_arch(None) == "sm_90" else "sm_80"
    for op in OPS:
        spec = ops.family(op).spec
        if not CHOSEN[op]:
            pytest.skip("run with the tests above (pytest test/gpu/test_ops.py)")
        reached = reachable(spec, own)
        assert reached <= CHOSEN[op], f"{op}: never chosen: {sorted(reached - CHOSEN[op])}"


def reachable(spec: object, own: str) -> set[str]:
    """The builds of `own` that some row length reaches: for each dtype and each N at an edge
    of a rule's bucket (every constant in the rules, one and eight either side), the first rule that
    takes it. A build whose buckets a tuning table's rules (ahead of the spec's) cover for its
    dtype is never launched, so it is not asked for."""
    edges = {int(t) for r in spec.rules for w in r.when for t in re.findall(r"\d+", w)}
    ns = sorted({n + d for n in edges for d in (-8, -1, 0, 1, 8) if n + d > 0} | set(NS))
    out = set()
    for dtype in {r.dtypes.get("X") for r in spec.rules}:
        for n in ns:
            first = next((r for r in spec.rules if r.dtypes.get("X") == dtype
                          and all_hold(r.when, {"N": n, "R": rows_for(n)})), None)  # fmt: skip
            if first is not None and spec.builds[first.build].arch == own:
                out.add(first.build)
    return out
