"""tilec.ops.gemm and bmm: GEMMs on torch tensors through the GEMM families
(tilec/ops/gemm_specs.py), the operands laid out by tilec/ops/gemm_plan.py (docs/runtime.md,
"tilec.ops.gemm and bmm").

`gemm(A, B)` computes alpha * act(A @ B + bias) + beta * C as torch.matmul reads A (M x K) and
B (K x N). The kernels compute A @ B^T with B of N x K, so B enters as B.t() (a view): torch's
row-major B is MN-major there, an nn.Linear weight's transpose K-major. Like every tilec.ops
call it reads shapes, strides, dtypes, devices and pointer alignment only (never the data),
allocates its output and launches on torch's current stream. Up to 32 rows against a weight
TMA cannot read (gemm_plan.row_plan) read it where it lies instead of copying it: up to 4 rows
the row kernel (examples/gemv.tile), past that examples/gemm_skinny.tile and colsum.
"""

from __future__ import annotations

import functools
from typing import Any

from tilec.ops import _check, device_facts, family, on_stream
from tilec.ops.gemm_plan import CHUNK, Operand, Plan, plan, round_up, row_plan, splits, viewed
from tilec.ops.gemm_specs import ADDMM, EPILOGUES, SKINNY
from tilec.ops.planned import PlannedCalls, new_empty

__all__ = ["bmm", "gemm"]

_ZEROS: dict[tuple[Any, ...], Any] = {}
PLANNED = PlannedCalls()  # plain products whose operands the kernels read as they are
_KEPT = ("keep", "view")  # operand plans that read the caller's memory (no copy)


def _arch(device: Any) -> str:
    return device_facts(device)[0]


def _sms(device: Any) -> int:
    return device_facts(device)[1]


def _number(op: str, name: str, value: Any) -> float:
    """A Python number (a tensor would need a host read: refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"tilec.ops.{op}: {name} must be a Python int or float, got "
                        f"{type(value).__name__}")  # fmt: skip
    return float(value)


def _check_pair(op: str, a: Any, b: Any, rank: int) -> Any:
    torch = _check(op, a)
    _check(op, b)
    if a.dim() != rank or b.dim() != rank:
        shape = "(M, K) and (K, N)" if rank == 2 else "(L, M, K) and (L, K, N)"
        raise ValueError(f"tilec.ops.{op}: A {shape} expected, got {list(a.shape)} and "
                         f"{list(b.shape)}")  # fmt: skip
    if a.shape[-1] != b.shape[-2] or a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"tilec.ops.{op}: A {list(a.shape)} and B {list(b.shape)} do not "
                         f"multiply (A's K must be B's, and the batches agree)")  # fmt: skip
    if a.dtype != b.dtype:
        raise TypeError(f"tilec.ops.{op}: A and B of one dtype, got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"tilec.ops.{op}: A is on {a.device}, B on {b.device}")
    return torch


def _operand(t: Any) -> Operand:
    """A 2-D tensor of R x K as an Operand (its strides; its base's 16-byte alignment)."""
    return Operand(t.shape[0], t.shape[1], tuple(t.stride()), t.data_ptr() % 16 == 0)


def laid_out(t: Any, how: str, k: int, major: str = "k") -> Any:
    """The R x K operand `t` as `how` says (gemm_plan.Plan): itself, itself under the strides
    gemm_plan.viewed gives (read `major`, k or m), a K-major copy whose rows lie
    round_up(K, 8) elements apart, an MN-major copy, or a K-major copy zero-padded to `k`
    columns."""
    if how == "keep":
        return t
    rows, cols = t.shape
    if how == "view":
        strides = viewed(_operand(t), "k" if major == "k" else "mn")
        assert strides is not None, f"no view of {tuple(t.stride())} reads {major}-major"
        return t.as_strided((rows, cols), strides)
    if how == "contiguous":
        out = t.new_empty((rows, round_up(cols)))[:, :cols]
        if _row_copy(t):
            family("pad_rows")(t, out)
        else:
            out.copy_(t)
        return out
    if how == "transposed":
        return t.new_empty((cols, rows)).copy_(t.t()).t()
    out = t.new_zeros((rows, k))
    out[:, :cols].copy_(t)
    return out


def _row_copy(t: Any) -> bool:
    """Whether the row copy (the `pad_rows` family) lays `t` out K-major: its K contiguous, its
    base 16-byte aligned, on the GPU. torch's copy_ of rows 2-byte aligned into 16-byte ones
    moves ~1 TB/s on an H100 (16 x 4096 x 4097: 76 us of which ~66 the copy of the weight)."""
    return t.is_cuda and t.stride(1) == 1 and t.data_ptr() % 16 == 0


def _cached_zeros(n: int, like: Any) -> Any:
    key = (n, like.dtype, like.device)
    if key not in _ZEROS:
        _ZEROS[key] = like.new_zeros((n,))
    return _ZEROS[key]


def _product(torch: Any, a: Any, bt: Any, p: Plan, out_dtype: Any, arch: str) -> Any:
    """A @ bt^T (bt: N x K, both laid out by `p`) in `out_dtype` (the inputs' or f32)."""
    m, n = a.shape[0], bt.shape[0]
    c = a.new_empty((m, n), dtype=out_dtype)
    if arch == "sm_90":
        family("gemm")(a, bt, c)
    elif out_dtype == a.dtype:
        family("gemm_sm80")(a, bt, c, 1.0)
    else:  # the f32 product on SM 8.x: gemm_splitk with one split (K-major operands)
        if p.layout != "kk":  # K-major copies, padded to whole 16-byte rows
            a, bt = laid_out(a, "pad", round_up(p.k)), laid_out(bt, "pad", round_up(p.k))
        w = a.new_empty((1, m, n), dtype=torch.float32)
        family("gemm_f32_sm80")(a, bt, w)
        c = w.view(m, n)
    return c


def _plan_product(A: Any, B: Any, a: Any, bt: Any, c: Any, p: Plan, arch: str) -> None:
    """Keeps the launch of A @ B (laid out as a, bt by `p`, into c) for later calls with A's
    and B's signature where it reads them as they are and writes c in their dtype."""
    if p.a not in _KEPT or p.b not in _KEPT or c.dtype != A.dtype:
        return
    if arch == "sm_90":
        step = (family("gemm").launch(a, bt, c), (0, 1, 2), ())
    else:
        step = (family("gemm_sm80").launch(a, bt, c, 1.0), (0, 1, 2), (None, None, None, 1.0))
    PLANNED.remember("gemm", (A, B), (), (step,), new_empty(tuple(c.shape)))


def _epilogue(torch: Any, z: Any, bias: Any, act: str | None, alpha: float, beta: float,
              c: Any, out_dtype: Any) -> Any:  # fmt: skip
    """alpha * act(z + bias) + beta * C in f32, then out_dtype (the composed epilogue)."""
    y = z.float()
    if bias is not None:
        y = y + bias.float()
    if act == "relu":
        y = torch.relu(y)
    elif act is not None:
        y = torch.nn.functional.gelu(y, approximate="tanh" if act == "gelu_tanh" else "none")
    if alpha != 1.0:
        y = y * alpha
    if c is not None and beta != 0.0:
        y = y + beta * c.float()
    return y.to(out_dtype)


def _fusable(act: str | None, alpha: float, beta: float, c: Any, arch: str) -> bool:
    """Whether an epilogue family computes alpha * act(A B^T + bias) + beta * C, as
    act(alpha * A B^T + bias') + beta * C (bias' = alpha * bias): no activation, or ReLU with
    alpha > 0 and no C (relu(alpha z) = alpha relu(z)), or any activation with alpha = 1 and no
    C; gemm_sm80_bias_relu.tile has no tanh form."""
    with_c = c is not None and beta != 0.0
    if act is not None and (with_c or alpha != 1.0 and (act != "relu" or alpha <= 0.0)):
        return False
    return arch == "sm_90" or act != "gelu_tanh"


def _fused(torch: Any, a: Any, bt: Any, bias: Any, act: str | None, alpha: float, beta: float,
           c: Any) -> Any:  # fmt: skip
    """The epilogue family's act(alpha * A B^T + bias') + beta * C (`_fusable` said it is
    alpha * act(A B^T + bias) + beta * C), A and B^T K-major, exactly."""
    with_c = c is not None and beta != 0.0
    name = ADDMM if with_c else EPILOGUES[act][0]
    m, n = a.shape[0], bt.shape[0]
    b = _cached_zeros(n, a) if bias is None else bias.to(a.dtype)
    if alpha != 1.0 and bias is not None:
        b = (b.float() * alpha).to(a.dtype)
    b = b if b.stride(0) == 1 and b.data_ptr() % 16 == 0 else b.clone()
    if with_c:  # C's values in a fresh row-major buffer the kernel reads and overwrites
        out = c.to(a.dtype, copy=True, memory_format=torch.contiguous_format)
    else:
        out = a.new_empty((m, n))
    family(name)(a, bt, out, b.expand(m, n), alpha, beta if with_c else 0.0)
    return out


def _check_epilogue(op: str, a: Any, n: int, m: int, bias: Any, act: Any, c: Any) -> None:
    if act not in EPILOGUES:
        raise ValueError(f"tilec.ops.{op}: activation one of {tuple(EPILOGUES)}, got {act!r}")
    if bias is not None:
        if tuple(bias.shape) != (n,):
            raise ValueError(f"tilec.ops.{op}: bias of shape ({n},) expected, got "
                             f"{tuple(bias.shape)}")  # fmt: skip
        if bias.device != a.device:
            raise ValueError(f"tilec.ops.{op}: bias is on {bias.device}, A on {a.device}")
    shape = (*a.shape[:-2], m, n)
    if c is not None and (tuple(c.shape) != shape or c.device != a.device):
        raise ValueError(f"tilec.ops.{op}: C of shape {shape} on {a.device} expected, got "
                         f"{tuple(c.shape)} on {c.device}")  # fmt: skip


def _out_dtype(torch: Any, op: str, a: Any, out_dtype: Any) -> Any:
    out = a.dtype if out_dtype is None else out_dtype
    if out not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"tilec.ops.{op}: out_dtype float16, bfloat16 or float32, got {out}")
    return out


def _plain(bias: Any, act: Any, alpha: Any, beta: Any, c: Any, out_dtype: Any) -> bool:
    """The arguments' defaults: a plain product in the inputs' dtype (alpha and beta Python
    floats, as _number takes them)."""
    if bias is not None or act is not None or c is not None or out_dtype is not None:
        return False
    return type(alpha) is float and alpha == 1.0 and type(beta) is float and beta == 0.0


@on_stream
def gemm(
    A: Any,
    B: Any,
    *,
    bias: Any = None,
    activation: str | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    C: Any = None,
    out_dtype: Any = None,
) -> Any:
    """alpha * act(A @ B + bias) + beta * C, A of M x K and B of K x N (torch.matmul's), f16 or
    bf16, any strides; bias of N values; act None, "relu", "gelu" or "gelu_tanh"; C of M x N
    (read only where beta != 0); out_dtype the inputs' dtype (default), the other 16-bit one
    or float32. A new M x N row-major tensor."""
    if _plain(bias, activation, alpha, beta, C, out_dtype):
        c = PLANNED.run("gemm", (A, B))  # a signature planned before: checked then
        if c is not None:
            return c
    torch = _check_pair("gemm", A, B, 2)
    (m, k), n = A.shape, B.shape[1]
    _check_epilogue("gemm", A, n, m, bias, activation, C)
    alpha, beta = _number("gemm", "alpha", alpha), _number("gemm", "beta", beta)
    out = _out_dtype(torch, "gemm", A, out_dtype)
    plain = bias is None and activation is None and alpha == 1.0 and (C is None or beta == 0.0)
    if m == 0 or n == 0 or k == 0:
        z = A.new_zeros((m, n), dtype=torch.float32)
        return z.to(out) if plain else _epilogue(torch, z, bias, activation, alpha, beta, C, out)
    bt = B.t()
    rows = row_plan(_operand(A), _operand(bt))
    if rows is not None:  # few rows and a weight TMA cannot read: B read where it lies
        z = _few_rows(torch, laid_out(A, rows.a, k), bt, rows.kernel, out if plain else None)
        return z.to(out) if plain else _epilogue(torch, z, bias, activation, alpha, beta, C, out)
    arch = _arch(A.device)
    fusable = not plain and out == A.dtype and _fusable(activation, alpha, beta, C, arch)
    # the SM90 `gemm` builds take any leading dimension; the epilogues and SM 8.x exact layouts
    p = plan(_operand(A), _operand(bt), lead=arch == "sm_90" and not fusable)
    a, b = laid_out(A, p.a, p.k, p.layout[0]), laid_out(bt, p.b, p.k, p.layout[1])
    if plain:
        direct = out if out in (A.dtype, torch.float32) else torch.float32
        c = _product(torch, a, b, p, direct, arch)
        _plan_product(A, B, a, b, c, p, arch)
        return c if c.dtype == out else c.to(out)
    if fusable and p.layout == "kk":
        return _fused(torch, a, b, bias, activation, alpha, beta, C)
    z = _product(torch, a, b, p, torch.float32, arch)
    return _epilogue(torch, z, bias, activation, alpha, beta, C, out)


def _few_rows(torch: Any, a: Any, bt: Any, kernel: str, out: Any) -> Any:
    """A @ bt^T by the few-row kernels (gemm_plan.row_plan's `kernel`): gemv, or gemm_skinny's
    split-K partial sums added up by colsum; in `out` where a kernel writes it (None: f32)."""
    (m, k), n = a.shape, bt.shape[0]
    if kernel == "gemv":
        z = a.new_empty((m, n), dtype=out if out == a.dtype else torch.float32)
        family("gemv")(_aligned_rows(a, k), bt, z)
        return z
    bn, bk, _, _ = SKINNY[min(r for r in SKINNY if r >= m)]
    s = splits(n, k, bn, bk, _sms(a.device))
    w = a.new_empty((s, m, n), dtype=torch.float32)
    family("gemm_skinny")(a, bt, w)
    z = a.new_empty((m, n), dtype=torch.float32 if out is None else out)
    family("colsum")(w.view(1, s, m * n), z.view(1, m * n))
    return z


def _aligned_rows(a: Any, k: int) -> Any:
    """The row kernel's A with its rows 16 bytes apart, so that the kernel takes A's aligned path
    (at an odd K a row stride of K sends A's loads down the skewed path): more rows copied (M x
    K, a few KB); one row as it is (the kernels test a tile's place, not the stride of a mode it
    spans one element of: tile_access.runtime_steps). Same run, CUDA graphs, 4096 x 4097 (H100:
    1 row 15.5 -> 14.8 us; H200, the copy's launch timed with the kernel: 2 rows 20.1 -> 18.7,
    4 rows 34.4 -> 29.8, 8 rows 98.9 -> 83.9 us)."""
    if a.stride(0) % CHUNK == 0 or a.shape[0] == 1:
        return a
    return laid_out(a, "contiguous", k)


def _k_major_kept(t: Any, k: int, tma: bool) -> bool:
    """Whether the batched kernels read the L x R x K operand `t` K-major as it lies: K
    contiguous and k long, every other stride a multiple of 16 bytes, positive where `tma`
    reads it (SM90: TMA takes no zero stride, so an expanded batch is copied), the base
    aligned."""
    strides = t.stride()
    fine = strides[2] == 1 and all(s % CHUNK == 0 and (s > 0 or not tma) for s in strides[:2])
    return fine and t.shape[2] == k and t.data_ptr() % 16 == 0


def _batched_operand(t: Any, k: int, tma: bool) -> Any:
    """An L x R x K operand as the batched kernels take it K-major (`_k_major_kept`): itself,
    else a contiguous copy, zero-padded to k columns where K is not a multiple of 8."""
    if _k_major_kept(t, k, tma):
        return t
    if t.shape[2] == k:
        return t.contiguous() if not t.is_contiguous() else t.clone()
    out = t.new_zeros((*t.shape[:2], k))
    out[:, :, : t.shape[2]].copy_(t)
    return out


def _batched_bt(b: Any, k: int, tma: bool) -> Any:
    """B (L x K x N) as the batched kernels take B^T K-major (`_batched_operand`)."""
    return _batched_operand(b.transpose(1, 2), k, tma)


def _n_major(bt: Any) -> bool:
    """Whether the `km` builds read B^T (L x N x K) N-major as it lies: torch.bmm's row-major
    B. N contiguous, its rows along K and its batches whole 16-byte chunks apart (rows not
    overlapping, no zero stride), its base aligned; K free (TMA zero-fills each box past it)."""
    sl, sn, sk = bt.stride()
    chunks = sk % CHUNK == 0 and sl % CHUNK == 0 and bt.data_ptr() % 16 == 0
    return sn == 1 and sk >= bt.shape[1] and sl > 0 and chunks


def _rows_apart(a: Any) -> Any:
    """A (L x M x K) as the `km` builds take it: itself where its K is contiguous and its other
    strides (positive) and base are 16-byte multiples, else a K-major copy whose rows lie
    round_up(K, 8) elements apart (the gap never read: the build binds A's leading dimension)."""
    sl, sm, sk = a.stride()
    if sk == 1 and min(sl, sm) > 0 and sm % CHUNK == sl % CHUNK == 0 and a.data_ptr() % 16 == 0:
        return a
    rows, m, k = a.shape
    return a.new_empty((rows, m, round_up(k)))[:, :, :k].copy_(a)


def _batched_layout(A: Any, B: Any, sm90: bool) -> tuple[Any, Any, tuple[Any, Any]]:
    """A and B^T as the batched builds take them, and how a planned call remakes each (None:
    read as it lies): on SM 9.0 a B^T the K-major builds would copy but TMA reads N-major as
    it lies (a row-major B) is kept for the `km` builds, A K-major beside it (`_rows_apart`);
    else both K-major (`_batched_operand`), K zero-padded to a multiple of 8."""
    b, kp = B.transpose(1, 2), round_up(A.shape[2])
    if sm90 and not _k_major_kept(b, kp, sm90) and _n_major(b):
        a = _rows_apart(A)
        return a, b, (None if a is A else _rows_apart, None)
    a, bt = _batched_operand(A, kp, sm90), _batched_operand(b, kp, sm90)
    prepare = (None if a is A else functools.partial(_batched_operand, k=kp, tma=sm90),
               None if bt is b else functools.partial(_batched_bt, k=kp, tma=sm90))  # fmt: skip
    return a, bt, prepare


@on_stream
def bmm(
    A: Any,
    B: Any,
    *,
    bias: Any = None,
    activation: str | None = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    C: Any = None,
    out_dtype: Any = None,
) -> Any:
    """gemm over a batch: A of L x M x K, B of L x K x N (torch.bmm's), the same arguments
    as gemm (bias of N values for every batch, C of L x M x N). The batched kernels run the
    plain product in the inputs' dtype (alpha applied after it); anything else runs gemm
    batch by batch (L launches, no host synchronisation)."""
    planned = _plain(bias, activation, alpha, beta, C, out_dtype)
    if planned:
        y = PLANNED.run("bmm", (A, B))  # a signature planned before: checked then
        if y is not None:
            return y
    torch = _check_pair("bmm", A, B, 3)
    (l, m, k), n = A.shape, B.shape[2]
    _check_epilogue("bmm", A, n, m, bias, activation, C)
    alpha, beta = _number("bmm", "alpha", alpha), _number("bmm", "beta", beta)
    out = _out_dtype(torch, "bmm", A, out_dtype)
    plain = bias is None and activation is None and (C is None or beta == 0.0)
    if l == 0 or m == 0 or n == 0 or k == 0 or not plain or out != A.dtype:
        y = A.new_empty((l, m, n), dtype=out)
        kw = {"bias": bias, "activation": activation, "alpha": alpha, "beta": beta}
        for i in range(l):
            y[i] = gemm(A[i], B[i], C=None if C is None else C[i], out_dtype=out, **kw)
        return y
    sm90 = _arch(A.device) == "sm_90"
    a, bt, prepare = _batched_layout(A, B, sm90)
    y = A.new_empty((l, m, n))
    name, args = ("bmm", (a, bt, y)) if sm90 else ("bmm_sm80", (a, bt, y, alpha))
    family(name)(*args)
    if planned:  # later calls of this signature launch as planned (copies made as here)
        step = (family(name).launch(*args), (0, 1, 2), () if sm90 else (None, None, None, alpha))
        PLANNED.remember("bmm", (A, B), (), (step,), new_empty(tuple(y.shape)), prepare)
    return y if alpha == 1.0 or not sm90 else y.mul_(alpha)
