"""Runtime binding fuzz: random shapes, strides (0 and negative too), dtypes, devices and
argument counts against the manifests of every example kernel. Binding gives a clear TypeError /
ValueError or a launch that is safe: shapes as the manifest says, no negative strides, written
tensors neither self-overlapping nor sharing memory, every `requires` met. Never another
exception. (The GPU tier, test/gpu/test_launch_fuzz.py, checks results.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilec.runtime import Manifest
from tilec.runtime.binding import bind, byte_span, check_requirements
from tilec.runtime.bundle import DTYPE_SIZES
from tilec.runtime.formula import evaluate

ROOT = Path(__file__).resolve().parents[2]
# The GEMM examples at a small tile, so that the drawn sizes reach past one tile.
SMALL = {"BM": "64", "BN": "64", "WM": "2", "WN": "2"}
PARAMS = {"softmax": {"COLS": "256"}, "gemm_sm80_batched": SMALL, "gemm_sm80": SMALL}
TYPESTR = {"f16": "<f2", "bf16": "<V2", "f32": "<f4", "i32": "<i4", "f64": "<f8", "i8": "|i1"}


@pytest.fixture(scope="module")
def manifests() -> list[Manifest]:
    """The manifest of every kernel of every example that lowers, read off its `tile` stage
    (what `tilec build` reads it from: no PTX needed to bind)."""
    from tilec.build import kernels_of
    from tilec.driver import CompileOptions, compile_file

    found = []
    for path in sorted((ROOT / "examples").glob("*.tile")):
        if path.stem == "gemm_sm90":
            continue  # does not lower yet: no bundle to launch
        params = PARAMS.get(path.stem, {})
        # The kernel's own target: --arch older than it is refused (the tile IR is the same).
        tile = compile_file(str(path), CompileOptions(emit="tile", params=params))
        for info in kernels_of(tile.value):
            found.append(
                Manifest(
                    entry=info.name,
                    target="sm_80",
                    params=info.params,
                    grid=info.grid,
                    block=info.threads,
                    constants=info.constants,
                    requires=info.requires,
                )
            )
    return found


class Fake:
    """A device array by __cuda_array_interface__ (never launched)."""

    def __init__(self, shape: tuple[int, ...], dtype: str, strides: tuple[int, ...], ptr: int):
        size = DTYPE_SIZES.get(dtype, 2)
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": TYPESTR[dtype],
            "data": (ptr, False),
            "strides": tuple(s * size for s in strides),
            "version": 3,
        }


def _row_major(shape: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return strides


@st.composite
def calls(draw: st.DrawFn, manifests: list[Manifest]) -> tuple[Manifest, list[object]]:
    """A call that fits the manifest (sizes drawn, shapes from them), then a few perturbations:
    rank, extents, dtype, strides (0, negative, padded, overlapping), placement, kind of array,
    argument count."""
    m = draw(st.sampled_from(manifests))
    sizes = st.one_of(st.integers(1, 40), st.sampled_from([0, 255, 256, 257, 300]))
    symbols = {**m.constants, **{s: draw(sizes) for s in sorted(m.symbols() - set(m.constants))}}
    args: list[object] = []
    base = 0x7F0000000000
    for p in m.params:
        if p.kind == "scalar":
            args.append(draw(st.sampled_from([1.5, 1.5, 1.5, 1.5, 2, "x", None])))
            continue
        if p.kind != "tensor":
            continue
        shape = [evaluate(d, symbols) for d in p.shape]
        if draw(st.integers(0, 9)) == 9:
            shape = shape[:-1] if shape and draw(st.booleans()) else [*shape, 2]
        if shape and draw(st.integers(0, 9)) == 9:
            shape[draw(st.integers(0, len(shape) - 1))] += draw(st.sampled_from([-1, 1, 5]))
        shape = [max(n, 0) for n in shape]
        strides = _row_major(tuple(shape))
        if shape and draw(st.booleans()):
            i = draw(st.integers(0, len(shape) - 1))
            strides[i] = draw(
                st.sampled_from([0, 0, -strides[i], strides[i] + 8, 1, strides[i] // 2])
            )
        dtype = p.dtype if draw(st.integers(0, 7)) < 7 else draw(st.sampled_from(["f32", "f64"]))
        base += draw(st.sampled_from([1 << 24, 1 << 24, 1 << 24, 2, 64, 0]))
        kind = draw(st.sampled_from(["device"] * 8 + ["host", "list"]))
        if kind == "host" and int(np.prod(shape)) < 100_000:
            args.append(np.zeros(shape, dtype=np.float16 if dtype == "f16" else np.float32))
        elif kind == "list":
            args.append([1.0] * (shape[0] if shape else 1))
        else:
            args.append(Fake(tuple(shape), dtype, tuple(strides), base))
    count = draw(st.sampled_from([0] * 8 + [1, -1]))
    if count > 0:
        args.append(Fake((4,), "f32", (1,), base + (1 << 30)))
    elif count < 0 and args:
        args.pop()
    return m, args


def check_safe(m: Manifest, args: list[object]) -> None:
    try:
        b = bind(m, tuple(args))
    except (TypeError, ValueError):
        return  # refused with a message: fine
    for t in m.tensors():
        view = b.views[t.name]
        assert view.shape == tuple(evaluate(d, b.symbols) for d in t.shape)
    check_requirements(m, b.symbols)
    for view in b.views.values():
        assert all(d >= 0 for n, d in zip(view.shape, view.strides, strict=True) if n > 1)
    written = [b.views[t.name] for t in m.tensors() if t.intent != "in"]
    for view in written:
        count = int(np.prod(view.shape))
        if count == 0 or count > 200_000 or view.host is not None:
            continue  # empty, too large to enumerate here, or copied to a buffer of its own
        offsets = np.zeros((), dtype=np.int64)
        for n, d in zip(view.shape, view.strides, strict=True):
            offsets = offsets[..., None] + np.arange(n, dtype=np.int64) * d
        assert np.unique(offsets).size == count, "a written view overlaps itself"
    spans = [(v.ptr + byte_span(v)[0], v.ptr + byte_span(v)[1]) for v in written if v.ptr]
    spans = [s for s, v in zip(spans, written, strict=False) if 0 not in v.shape]
    for i, (lo, hi) in enumerate(spans):
        for lo2, hi2 in spans[i + 1 :]:
            assert hi < lo2 or hi2 < lo, "two written tensors share memory"


def test_binding_fuzz(manifests: list[Manifest]) -> None:
    @settings(
        max_examples=1500,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(calls(manifests))
    def property(call: tuple[Manifest, list[object]]) -> None:
        check_safe(*call)

    property()


def test_the_fuzzed_manifests_cover_what_they_should(manifests: list[Manifest]) -> None:
    entries = {m.entry for m in manifests}
    assert entries >= {"vadd", "softmax", "transpose", "gemm", "gemm_batched", "gemm_bias_act"}
    assert entries >= {"gemm_splitk", "gemm_splitk_sum"}
    # The online softmax handles any N; attention_step's one K/V tile bounds N (a `requires`).
    softmax = next(m for m in manifests if m.entry == "softmax")
    assert softmax.requires == ()
    step = next(m for m in manifests if m.entry == "attention_step")
    assert [(r.value, r.at_most) for r in step.requires] == [("N", 64)]
    # W and B of the persistent LayerNorm are tiled at row 0 of their stride-0 rows: that
    # bounds N only, not R (each row of a broadcast is the same N values).
    persistent = next(m for m in manifests if m.entry == "layernorm_persistent")
    assert [(r.value, r.at_most) for r in persistent.requires] == [("N", 32768)]
    batched = next(m for m in manifests if m.entry == "gemm_batched")
    assert any(t.strides and any(isinstance(s, str) for s in t.strides) for t in batched.tensors())
