"""tilec.ops' planned calls (tilec/ops/planned.py): a repeated gemm/bmm signature launches
what its first call planned, with no checks, operand plan or family choice made again, and a
call that one of those would refuse still finds no launch. CPU torch tensors stand in for CUDA
ones and the families are stand-ins recording what they are asked (no GPU, no bundles).
test_ops_planned_rows.py does the same for softmax, the norms and their backward.
Skips without torch (CI has none)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import sys  # noqa: E402

import tilec.ops  # noqa: E402, F401  (after the skip)
from tilec.ops.planned import PlannedCalls  # noqa: E402

gemm_module = sys.modules["tilec.ops.gemm"]  # tilec.ops.gemm is the function


class StandInFamily:
    """Records each call's tensor pointers, and each planned launch's (with its scalars)."""

    def __init__(self, name: str, log: list[tuple[Any, ...]], width: int) -> None:
        self.name, self.log, self.width = name, log, width
        self.args: tuple[Any, ...] = ()  # the last call's arguments

    def __call__(self, *args: Any) -> None:
        ptrs = [a.data_ptr() for a in args if isinstance(a, torch.Tensor)]
        self.log.append(("call", self.name, ptrs[: self.width]))
        self.args = args

    def launch(self, *args: Any) -> Any:
        def launched(ptrs: Any, scalars: tuple[Any, ...]) -> None:
            assert len(ptrs) == len(args), "a pointer (or 0) for each argument"
            kept = [s for s in scalars if s is not None]
            self.log.append(("launch", self.name, [p for p in ptrs if p][: self.width], *kept))

        return launched


def stand_ins(
    monkeypatch: pytest.MonkeyPatch, modules: tuple[Any, ...], width: int = 8
) -> list[tuple[Any, ...]]:
    """`modules`' families as StandInFamily, their planned calls afresh, CPU tensors checked as
    CUDA ones (tilec.ops._check's dtype rule kept); the log the families write. The gemm
    families' records keep A's, B's and C's pointers (`width` 3)."""
    calls: list[tuple[Any, ...]] = []
    families: dict[str, StandInFamily] = {}

    def check(op: str, x: Any) -> Any:  # tilec.ops._check, CPU tensors taken for CUDA ones
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"tilec.ops.{op}: expected a torch.Tensor, got {type(x).__name__}")
        if x.dtype not in (torch.float16, torch.bfloat16):
            raise TypeError(f"tilec.ops.{op}: float16 or bfloat16 tensors, got {x.dtype}")
        return torch

    def family(name: str) -> StandInFamily:
        return families.setdefault(name, StandInFamily(name, calls, width))

    for module in modules:
        monkeypatch.setattr(module, "PLANNED", PlannedCalls())
        monkeypatch.setattr(module, "_check", check, raising=False)  # attention has its own
        monkeypatch.setattr(module, "family", family)
    return calls


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    monkeypatch.setattr(gemm_module, "_arch", lambda device: "sm_90")
    return stand_ins(monkeypatch, (gemm_module,), 3)


def counting_plan(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    asked: list[int] = []
    plan = gemm_module.plan

    def counted(*args: Any, **kwargs: Any) -> Any:
        asked.append(1)
        return plan(*args, **kwargs)

    monkeypatch.setattr(gemm_module, "plan", counted)
    return asked


def test_a_repeated_gemm_launches_as_planned_without_planning_again(
    log: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = counting_plan(monkeypatch)
    a, b = torch.randn(128, 64, dtype=torch.float16), torch.randn(64, 128, dtype=torch.float16)
    first = gemm_module.gemm(a, b)
    assert log == [("call", "gemm", [a.data_ptr(), b.data_ptr(), first.data_ptr()])]
    a2, b2 = torch.randn_like(a), torch.randn_like(b)  # the same signature, other memory
    second = gemm_module.gemm(a2, b2)
    assert asked == [1] and len(log) == 2
    assert log[1] == ("launch", "gemm", [a2.data_ptr(), b2.data_ptr(), second.data_ptr()])
    assert second.shape == (128, 128) and second.dtype == torch.float16
    gemm_module.gemm(a2, b2, alpha=2.0)  # not the plain product: the checked path
    gemm_module.gemm(a2.t().contiguous().t(), b2)  # another layout: planned anew
    assert [e[0] for e in log[2:]] == ["call", "call"] and len(asked) == 3


def test_a_call_the_checks_refuse_finds_no_planned_launch(log: list[Any]) -> None:
    a, b = torch.randn(128, 64, dtype=torch.float16), torch.randn(64, 128, dtype=torch.float16)
    gemm_module.gemm(a, b)
    gemm_module.gemm(a, b)
    assert [e[0] for e in log] == ["call", "launch"]
    with pytest.raises(TypeError, match="one dtype"):
        gemm_module.gemm(a, b.to(torch.bfloat16))
    with pytest.raises(TypeError, match="float16 or bfloat16"):
        gemm_module.gemm(a.float(), b.float())
    with pytest.raises(ValueError, match="do not multiply"):
        gemm_module.gemm(a, torch.randn(32, 128, dtype=torch.float16))
    with pytest.raises(TypeError, match="torch.Tensor"):
        gemm_module.gemm(a, b.numpy())
    with pytest.raises(TypeError, match="alpha"):
        gemm_module.gemm(a, b, alpha=True)
    unaligned = torch.randn(128 * 64 + 1, dtype=torch.float16)[1:].view(128, 64)
    gemm_module.gemm(unaligned, b)  # another alignment: planned anew (A copied K-major)
    assert [e[0] for e in log] == ["call", "launch", "call"]


def test_a_repeated_bmm_copies_b_as_its_plan_did(log: list[Any]) -> None:
    a = torch.randn(2, 128, 64, dtype=torch.float16)
    b = torch.randn(2, 64, 100, dtype=torch.float16)  # row-major, 200-byte rows: no TMA
    gemm_module.bmm(a, b)
    y = gemm_module.bmm(a, b)
    kind, name, (pa, pb, py) = log[1]
    assert (kind, name, pa, py) == ("launch", "bmm", a.data_ptr(), y.data_ptr())
    assert pb != b.data_ptr() and y.shape == (2, 128, 100)  # a copy, made this call
    kt = b.transpose(1, 2).contiguous()  # what the first call passed, rebuilt
    assert gemm_module._batched_bt(b, 64, True).equal(kt)
    bt = torch.randn(2, 128, 64, dtype=torch.float16).transpose(1, 2)  # B^T K-major: kept
    gemm_module.bmm(a, bt)
    gemm_module.bmm(a, bt)
    assert log[-1] == ("launch", "bmm", [a.data_ptr(), bt.data_ptr(), log[-1][2][2]])


def chosen_build(name: str) -> str:
    """The build the family `name`'s rules (gemm_specs) pick for the arguments its stand-in
    was last called with: their sizes and strides, as a family reads them."""
    from test_gemm_plan import chosen

    from tilec.ops.gemm_specs import GEMM_SPECS

    spec = GEMM_SPECS[name]()
    args = dict(zip((n for n, _ in spec.args), gemm_module.family(name).args, strict=False))
    syms = {s: args[t].shape[i] for s, (t, i) in spec.sizes.items()}
    syms.update({s: args[t].stride(i) for s, (t, i) in spec.strides.items()})
    dtype = {torch.float16: "f16", torch.bfloat16: "bf16"}[args["A"].dtype]
    return chosen(spec, "sm_90" if name == "bmm" else "sm_80", {"A": dtype}, syms)


@pytest.mark.parametrize("k", [64, 77])
def test_a_row_major_b_bmm_is_read_as_it_lies_on_sm90(log: list[Any], k: int) -> None:
    """torch.bmm's row-major B (L x K x N, N contiguous) is N-major B^T: the `km` builds read
    it where it lies, on the first call and on the planned ones; A is kept where its rows are
    16-byte chunks apart, else copied with rows round_up(K, 8) apart (K = 77: no zero pad)."""
    a = torch.randn(3, 200, k, dtype=torch.bfloat16)
    b = torch.randn(3, k, 136, dtype=torch.bfloat16)
    first = gemm_module.bmm(a, b)
    assert log[0][:2] == ("call", "bmm") and log[0][2][1:] == [b.data_ptr(), first.data_ptr()]
    x, bt, _ = gemm_module.family("bmm").args
    assert bt.stride() == (k * 136, 1, 136) and bt.shape == (3, 136, k)
    assert x.equal(a) and (x is a) == (k % 8 == 0)
    if k == 77:  # copied: rows 80 elements apart
        assert x.stride() == (200 * 80, 80, 1)
    assert chosen_build("bmm") == "km_bf16_sm90a"
    a2, b2 = torch.randn_like(a), torch.randn_like(b)  # the same signature: planned
    second = gemm_module.bmm(a2, b2)
    kind, name, (pa, pb, py) = log[1]
    assert (kind, name, pb, py) == ("launch", "bmm", b2.data_ptr(), second.data_ptr())
    assert (pa == a2.data_ptr()) == (k % 8 == 0) and len(log) == 2


def test_which_bmm_operands_are_copied(log: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A K-major B^T (B = W.transpose(1, 2)) takes the K-major builds; a row-major B whose
    rows TMA cannot read (N = 100: 200-byte rows) is copied K-major, and so is a B (or A)
    expanded along the batch, either layout (TMA takes no zero stride); SM 8.x copies every
    row-major B (its batched kernel reads K-major operands only) and reads an expanded one."""
    a = torch.randn(2, 64, 64, dtype=torch.float16)
    w = torch.randn(2, 136, 64, dtype=torch.float16)
    gemm_module.bmm(a, w.transpose(1, 2))
    assert log[-1][2][:2] == [a.data_ptr(), w.data_ptr()]
    assert chosen_build("bmm") == "kk_f16_sm90a"
    odd = torch.randn(2, 64, 100, dtype=torch.float16)
    gemm_module.bmm(a, odd)
    assert log[-1][2][1] != odd.data_ptr() and gemm_module.family("bmm").args[1].stride(2) == 1
    assert chosen_build("bmm") == "kk_f16_sm90a"
    b = torch.randn(64, 136, dtype=torch.float16)
    for shared in (b.expand(2, 64, 136), w[0].t().expand(2, 64, 136)):  # TMA: no zero stride
        gemm_module.bmm(a, shared)
        x, bt, _ = gemm_module.family("bmm").args
        assert x is a and bt.is_contiguous() and chosen_build("bmm") == "kk_f16_sm90a"
    for shared_a, b3 in ((a[0].expand(2, 64, 64), b.expand(2, 64, 136)),
                         (a[0].expand(2, 64, 64), torch.randn(2, 64, 136).half())):  # fmt: skip
        gemm_module.bmm(shared_a, b3)
        x = gemm_module.family("bmm").args[0]
        assert x.stride(0) > 0 and x.equal(shared_a)
    monkeypatch.setattr(gemm_module, "_arch", lambda device: "sm_80")
    b = torch.randn(2, 64, 136, dtype=torch.float16)
    gemm_module.bmm(a, b)
    assert log[-1][1] == "bmm_sm80" and log[-1][2][1] != b.data_ptr()
    assert chosen_build("bmm_sm80") == "kk_f16_sm80"
    shared = w[0, :72].t().expand(2, 64, 72)  # SM 8.x's cp.async reads a zero stride: kept
    gemm_module.bmm(a, shared)
    assert log[-1][2][:2] == [a.data_ptr(), shared.data_ptr()]


def test_a_repeated_attention_launches_as_planned(monkeypatch: pytest.MonkeyPatch) -> None:
    attention = sys.modules["tilec.ops.attention"]
    log = stand_ins(monkeypatch, (attention,))
    monkeypatch.setattr(attention, "_on_gpu", lambda op, q: None)
    q, k, v = (torch.randn(1, 2, 16, 64, dtype=torch.float16) for _ in range(3))
    attention.attention(q, k, v, causal=True)
    o, lse = attention.attention(q, k, v, causal=True, return_lse=True)  # another key
    o2, lse2 = attention.attention(q, k, v, causal=True, return_lse=True)
    kind, name, ptrs, scale = log[2]
    assert (kind, name, scale) == ("launch", "attention_causal", 0.125)
    assert ptrs == [t.data_ptr() for t in (q, k, v, o2, lse2)]
    assert o2.shape == q.shape and lse2.shape == (1, 2, 16) and lse2.dtype == torch.float32
    kt = torch.randn(1, 16, 2, 64, dtype=torch.float16).transpose(1, 2)  # (B, S, H, D) memory
    for _ in range(2):  # another stride: planned anew, then read in place
        attention.attention(q, kt, v, causal=True, scale=0.5)
    assert [e[0] for e in log] == ["call", "call", "launch", "call", "launch"]
    assert log[-1][2][1] == kt.data_ptr() and log[-1][-1] == 0.5
    with pytest.raises(TypeError, match="causal must be a bool"):
        attention.attention(q, k, v, causal=1)
    with pytest.raises(ValueError, match="scale must be finite"):
        attention.attention(q, k, v, scale=-1.0)
    misaligned = torch.randn(2 * 16 * 64 + 1, dtype=torch.float16)[1:].view(1, 2, 16, 64)
    for _ in range(2):  # unaligned: q copied each call
        attention.attention(misaligned, k, v, causal=True)
    assert log[-1][0] == "launch" and log[-1][2][0] not in (misaligned.data_ptr(), q.data_ptr())


def test_the_row_kernel_reads_a_with_rows_16_bytes_apart(
    log: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At an odd K one row of A goes to the row kernel as it is (the kernel tests where its tile
    lies, not the stride of A's rows: tile_access.runtime_steps), more rows as a copy whose rows
    are 16 bytes apart, made by the row copy (the CPU tensors taken as CUDA ones)."""
    monkeypatch.setattr(gemm_module, "_row_copy", lambda t: t.stride(1) == 1)
    w = torch.randn(4096, 4097, dtype=torch.bfloat16)  # an nn.Linear weight at an odd K
    a = torch.randn(1, 4097, dtype=torch.bfloat16)
    gemm_module.gemm(a, w.t())
    assert gemm_module.family("gemv").args[0] is a  # its one row's stride is never read
    three = torch.randn(3, 4097, dtype=torch.bfloat16)
    gemm_module.gemm(three, w.t())
    x = gemm_module.family("gemv").args[0]
    assert x.data_ptr() != three.data_ptr() and x.stride() == (4104, 1) and x.shape == three.shape
    src, dst = gemm_module.family("pad_rows").args  # copied by the row copy (pad_rows.tile)
    assert src is three and dst.data_ptr() == x.data_ptr() and dst.stride() == (4104, 1)


@pytest.mark.parametrize("out", [None, torch.float32, torch.float16])
def test_past_four_rows_the_skinny_gemm_and_colsum(
    log: list[Any], monkeypatch: pytest.MonkeyPatch, out: Any
) -> None:
    """5 to 32 rows against a weight TMA cannot read: gemm_skinny reads the weight where it
    lies into S split-K partial sums (S x M x N, f32; S from gemm_plan.splits on the device's
    SMs), colsum adds them up into the output's dtype (f32 where an epilogue follows); no row
    copy of the weight, which 33 rows get (the CPU tensors taken as CUDA ones)."""
    from tilec.ops.gemm_plan import splits

    monkeypatch.setattr(gemm_module, "_sms", lambda device: 132)
    monkeypatch.setattr(gemm_module, "_row_copy", lambda t: t.stride(1) == 1)
    w = torch.randn(4096, 4097, dtype=torch.bfloat16)
    for m, bk in ((5, 32), (16, 32), (17, 32), (32, 32)):
        a = torch.randn(m, 4097, dtype=torch.bfloat16)
        y = gemm_module.gemm(a, w.t(), out_dtype=out)
        s = splits(4096, 4097, 64, bk, 132)
        x, bt, part = gemm_module.family("gemm_skinny").args
        assert x is a and bt.data_ptr() == w.data_ptr() and bt.stride() == (4097, 1)
        assert part.shape == (s, m, 4096) and part.dtype == torch.float32, (m, part.shape)
        p, z = gemm_module.family("colsum").args
        assert p.shape == (1, s, m * 4096) and p.data_ptr() == part.data_ptr()
        assert z.shape == (1, m * 4096) and z.data_ptr() == y.data_ptr()
        assert y.shape == (m, 4096) and y.dtype == (out or torch.bfloat16)
        assert not any(e[1] == "pad_rows" for e in log), "the weight was copied"
    gemm_module.gemm(torch.randn(33, 4097, dtype=torch.bfloat16), w.t(), out_dtype=out)
    assert [e[1] for e in log[-2:]] == ["pad_rows", "gemm"]  # 33 rows: the weight copied
    assert gemm_module.family("pad_rows").args[0].data_ptr() == w.data_ptr()
    bias = torch.randn(4096, dtype=torch.bfloat16)
    y = gemm_module.gemm(a, w.t(), bias=bias, activation="relu", out_dtype=out)
    assert gemm_module.family("colsum").args[1].dtype == torch.float32  # the epilogue's input
    assert y.dtype == (out or torch.bfloat16)
