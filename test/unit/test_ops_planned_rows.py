"""tilec.ops' planned row calls (tilec/ops/planned.py): a repeated softmax, layernorm or rmsnorm
signature, and a repeated norm backward (its rows launch and its colsum), launch what the first
call planned with this call's pointers; any change a check or the launch would see (a shape,
strides, a dtype, an alignment, a weight given or not, eps) plans anew, and a call a check
refuses still raises. CPU torch tensors stand in for CUDA ones, the families are stand-ins
recording the pointers they are given (test_ops_planned.py's). Skips without torch."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from test_ops_planned import stand_ins  # noqa: E402

import tilec.ops as ops  # noqa: E402  (after the skip)
from tilec.ops import backward  # noqa: E402
from tilec.ops.backward_specs import partial_rows  # noqa: E402

F16 = torch.float16


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    monkeypatch.setattr(backward, "_num_sms", lambda device: 4)
    return stand_ins(monkeypatch, (ops, backward))


def kinds(log: list[tuple[Any, ...]]) -> list[str]:
    return [entry[0] for entry in log]


def test_a_repeated_norm_launches_with_this_calls_pointers(log: list[Any]) -> None:
    x, w, b = torch.randn(4, 64, dtype=F16), torch.randn(64, dtype=F16), torch.randn(64, dtype=F16)
    first = ops.layernorm(x, w, b, eps=1e-3)
    assert log == [("call", "layernorm", [x.data_ptr(), w.data_ptr(), b.data_ptr(),
                                          first.data_ptr()])]  # fmt: skip
    x2, w2, b2 = torch.randn_like(x), torch.randn_like(w), torch.randn_like(b)
    second = ops.layernorm(x2, w2, b2, eps=1e-3)
    ptrs = [x2.data_ptr(), w2.data_ptr(), b2.data_ptr(), second.data_ptr()]
    assert log[1] == ("launch", "layernorm", ptrs, 1e-3)
    assert second.shape == x.shape and second.dtype == F16 and second.is_contiguous()
    ops.layernorm(x2, w2, b2, eps=1e-4)  # another eps: planned anew, then launched with it
    assert log[2][0] == "call" and ops.layernorm(x2, w2, b2, eps=1e-4) is not None
    assert log[3][0] == "launch" and log[3][-1] == 1e-4


def test_absent_vectors_are_the_constants_the_checked_call_read(log: list[Any]) -> None:
    x = torch.randn(2, 3, 64, dtype=F16)  # rows of a 3-D x: a view, read where it lies
    first = ops.rmsnorm(x)
    ones = log[0][2][1]
    again = ops.rmsnorm(x)
    assert log[1] == ("launch", "rmsnorm", [x.data_ptr(), ones, again.data_ptr()],
                      torch.finfo(F16).eps)  # fmt: skip
    assert again.shape == first.shape == x.shape
    w = torch.randn(64, dtype=F16)
    ops.rmsnorm(x, w)  # a weight given: another signature
    ops.rmsnorm(x, w)
    assert kinds(log) == ["call", "launch", "call", "launch"]
    assert log[3][2][:2] == [x.data_ptr(), w.data_ptr()]


def test_which_vector_is_absent_is_part_of_the_signature(log: list[Any]) -> None:
    x, v = torch.randn(4, 64, dtype=F16), torch.randn(64, dtype=F16)
    for weight, bias in ((v, None), (v, None), (None, v), (None, v)):
        ops.layernorm(x, weight, bias)
    assert kinds(log) == ["call", "launch"] * 2
    zeros, ones = log[1][2][2], log[3][2][1]
    assert log[1][2][:2] == [x.data_ptr(), v.data_ptr()] and log[3][2][2] == v.data_ptr()
    assert zeros not in (v.data_ptr(), ones)


@pytest.mark.parametrize(
    "other",
    [
        lambda x: torch.randn(8, 64, dtype=F16),  # another shape
        lambda x: torch.randn(64, 4, dtype=F16).t(),  # another stride
        lambda x: x.to(torch.bfloat16),  # another dtype
        lambda x: x.unsqueeze(0),  # another rank
    ],
    ids=("shape", "stride", "dtype", "rank"),
)
def test_a_changed_signature_is_planned_anew(log: list[Any], other: Any) -> None:
    x = torch.randn(4, 64, dtype=F16)
    ops.softmax(x)
    ops.softmax(x)
    y = other(x)
    out = ops.softmax(y)
    assert kinds(log) == ["launch" if i == 1 else "call" for i in range(3)]
    assert out.shape == y.shape and out.dtype == y.dtype


def test_an_unaligned_or_strided_input_reads_the_copy_the_plan_made(log: list[Any]) -> None:
    x = torch.randn(4, 64, dtype=F16)
    ops.layernorm(x)
    ops.layernorm(x)
    unaligned = torch.randn(4 * 64 + 1, dtype=F16)[1:].view(4, 64)
    for _ in range(2):
        ops.layernorm(unaligned)
    assert kinds(log) == ["call", "launch", "call", "launch"]
    read = log[3][2][0]  # this call's row-major copy, aligned, not the input
    assert read != unaligned.data_ptr() and read % 16 == 0
    w = torch.randn(64, dtype=F16)  # a weight read where it lies
    strided = torch.randn(128, dtype=F16)[::2]  # a weight of stride 2: copied each call
    ops.layernorm(x, w, strided)
    ops.layernorm(x, w, strided)
    assert log[5][2][1] == w.data_ptr() and log[5][2][2] != strided.data_ptr()


def test_refusals_after_a_planned_call(log: list[Any]) -> None:
    x, w = torch.randn(4, 64, dtype=F16), torch.randn(64, dtype=F16)
    ops.layernorm(x, w)
    ops.layernorm(x, w)
    with pytest.raises(ValueError, match="weight of shape"):
        ops.layernorm(x, torch.randn(32, dtype=F16))
    with pytest.raises(TypeError, match="float16 or bfloat16"):
        ops.layernorm(x.float(), w)
    with pytest.raises(TypeError, match="torch.Tensor"):
        ops.layernorm(x.numpy(), w)
    with pytest.raises(ValueError, match="dy of shape"):
        backward.layernorm_backward(x, torch.randn(4, 32, dtype=F16), w)
    backward.layernorm_backward(x, torch.randn_like(x), w)
    backward.layernorm_backward(x, torch.randn_like(x), w)
    with pytest.raises(ValueError, match="dy is"):
        backward.layernorm_backward(x, torch.randn(4, 64, dtype=torch.bfloat16), w)


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_a_repeated_norm_backward_launches_its_rows_and_colsum(log: list[Any], op: str) -> None:
    call = getattr(backward, f"{op}_backward")
    x, w = torch.randn(6, 36, dtype=F16), torch.randn(36, dtype=torch.float32)
    call(x, torch.randn_like(x), w, 1e-5)  # an f32 weight: converted for the kernels each call
    dy = torch.randn_like(x)
    dx, *sums = call(x, dy, w, 1e-5)
    rows, colsum = log[2:]
    batches = 2 if op == "layernorm" else 1
    assert kinds(log) == ["call", "call", "launch", "launch"] and rows[1] == f"{op}_bwd"
    px, pw, pdy, pdx, *parts = rows[2]
    assert (px, pdy, pdx) == (x.data_ptr(), dy.data_ptr(), dx.data_ptr()) and pw % 16 == 0
    assert pw != w.data_ptr() and rows[3] == 1e-5  # the weight's f16 copy; eps
    assert len(parts) == batches and colsum[1] == "colsum"
    partials, out = colsum[2]
    g = partial_rows(f"{op}_bwd", 36, 6, 4)
    apart = -(-g * 36 // 4) * 4 * 4  # bytes between batches: each 16-byte aligned
    assert parts == [partials + i * apart for i in range(batches)]
    assert [s.data_ptr() for s in sums] == [out + i * 36 * 4 for i in range(batches)]
    assert dx.shape == x.shape and all(s.shape == (36,) and s.dtype == w.dtype for s in sums)


def test_a_norm_backward_plans_per_signature(log: list[Any]) -> None:
    x, w = torch.randn(4, 64, dtype=F16), torch.randn(64, dtype=F16)
    for dy in (torch.randn_like(x), torch.randn(64, 4, dtype=F16).t()):  # dy strided: copied
        backward.rmsnorm_backward(x, dy, w)
        backward.rmsnorm_backward(x, dy, w)
    assert kinds(log) == ["call", "call", "launch", "launch"] * 2
    assert log[-2][2][2] != dy.data_ptr()  # the strided dy's row-major copy
    backward.rmsnorm_backward(x, dy, w, 1e-3)  # eps given: another signature
    assert kinds(log)[-2:] == ["call", "call"]
