"""Runtime tests without a GPU: manifest round-trip, formulas, argument binding, error messages."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tilec.runtime import (
    FormulaError,
    Manifest,
    ManifestError,
    Requirement,
    ScalarParam,
    SizeParam,
    TensorParam,
    TmaDescriptor,
    TmaParam,
    evaluate,
    load,
    read_bundle,
    write_bundle,
)
from tilec.runtime.binding import bind, tma_encode_args
from tilec.runtime.bundle import VariantRef, validate
from tilec.runtime.tensors import as_view

rng = np.random.default_rng(1234)


class FakeCuda:
    """An object exposing __cuda_array_interface__ with a fake device pointer: never launched."""

    def __init__(
        self,
        shape: tuple[int, ...],
        typestr: str = "<f2",
        ptr: int = 0x7F0000000000,
        strides: tuple[int, ...] | None = None,
        version: int = 3,
    ) -> None:
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (ptr, False),
            "strides": strides,
            "version": version,
        }


def gemm_manifest(**overrides: Any) -> Manifest:
    fields: dict[str, Any] = dict(
        entry="gemm",
        target="sm_90a",
        params=(
            TensorParam("A", "f16", ("M", "K"), intent="in"),
            TensorParam("B", "f16", ("K", "N"), strides=(1, "K"), intent="in"),  # column-major
            TensorParam("C", "f32", ("M", "N"), align=16),
            SizeParam("M", ("A", 0), "i32"),
            SizeParam("N"),
            SizeParam("K", ("A", 1)),
            ScalarParam("alpha", "f32"),
            TmaParam("tmaA", "tmaA"),
        ),
        grid=("cdiv(M, BM)", "cdiv(N, BN)", 1),
        block=(128, 1, 1),
        dynamic_smem="STAGES * (BM + BN) * BK * 2",
        constants={"BM": 128, "BN": 64, "BK": 64, "STAGES": 3},
        tma=(TmaDescriptor("tmaA", "A", ("BM", "BK"), swizzle="128B", l2_promotion="128B"),),
        source_hash="sha256:abc",
        source_params={"BM": 128},
        tilec_version="0.1.0",
    )
    fields.update(overrides)
    return Manifest(**fields)


# --- formulas -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("formula", "value"),
    [
        ("cdiv(N, 128)", 8),
        ("cdiv(N + 1, 128)", 9),
        ("N // 3 - -2", 343),
        ("max(N, 7, 2000) % 7", 5),
        ("min(N, 5) * 2", 10),
        ("min(N - 1) + max(2)", 1025),  # one argument: itself (it raised TypeError)
        ("round_up(N + 1, 256)", 1280),
        ("(N % 16) == (0)", 1),  # a variant's condition: one comparison, 1 or 0
        ("N % 32 == 8", 0),
        ("cdiv(N, 128) >= 8", 1),
        ("N != 1024", 0),
        (" 3 ", 3),
        (42, 42),
    ],
)
def test_formula_values(formula: int | str, value: int) -> None:
    assert evaluate(formula, {"N": 1024}) == value


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("cdiv(N, Q)", "unknown symbol 'Q' \\(known: N\\)"),
        ("N / 2", "use // or cdiv"),
        ("N // 0", "division by zero"),
        ("cdiv(N, 0)", "division by zero"),
        ("cdiv(N)", "cdiv takes 2 arguments"),
        ("__import__('os')", "unknown function '__import__'"),
        ("N.real", "unsupported syntax 'N.real'"),
        ("N ** 2", "unsupported syntax"),
        ("1.5 * N", "unsupported syntax '1.5'"),
        ("cdiv(N,", "syntax error"),
        ("min()", "min needs arguments"),
        ("1 < N < 3", "unsupported syntax"),  # one comparison, at the top only
        ("(N < 3) + 1", "unsupported syntax"),
    ],
)
def test_formula_errors(formula: str, message: str) -> None:
    with pytest.raises(FormulaError, match=message):
        evaluate(formula, {"N": 1024})


def test_formula_rejects_non_int() -> None:
    with pytest.raises(FormulaError, match="expected an int or a string"):
        evaluate(2.0, {})  # type: ignore[arg-type]


# --- manifest and bundle --------------------------------------------------------------------


def test_manifest_json_round_trip() -> None:
    m = gemm_manifest()
    data = json.loads(json.dumps(m.to_json()))
    assert data["format"] == "tilec-bundle" and data["format_version"] == 1
    assert data["params"][1] == {
        "kind": "tensor",
        "name": "B",
        "dtype": "f16",
        "shape": ["K", "N"],
        "strides": [1, "K"],
        "align": 16,
        "intent": "in",
    }
    assert data["params"][3] == {"kind": "size", "name": "M", "from": ["A", 0], "dtype": "i32"}
    assert Manifest.from_json(data) == m
    need = gemm_manifest(requires=(Requirement("N", "BN * 4", "one row of tiles"),))
    data = json.loads(json.dumps(need.to_json()))
    assert data["requires"] == [{"value": "N", "at_most": "BN * 4", "why": "one row of tiles"}]
    assert Manifest.from_json(data) == need


def test_bundle_round_trip(tmp_path: Path) -> None:
    m = gemm_manifest()
    ptx = "// fake ptx\n.visible .entry gemm()\n"
    root = write_bundle(tmp_path / "gemm.tilec", m, ptx)
    assert sorted(p.name for p in root.iterdir()) == ["gemm.ptx", "manifest.json"]
    assert read_bundle(root) == (m, ptx)
    kernel = load(root)
    assert kernel.manifest == m and kernel.ptx == ptx
    # Saving over an existing bundle replaces it and leaves no temp directories behind.
    kernel.ptx = ptx + "// v2\n"
    kernel.save(root)
    assert read_bundle(root)[1].endswith("// v2\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemm.tilec"]
    assert "gemm(A: f16, B: f16, C: f32, alpha: f32)" in repr(kernel)


def test_variant_bundle_chosen_by_the_launch_sizes(tmp_path: Path) -> None:
    """variant(K % 16 == 8, ...): the bundle holds the variant's bundle in a folder; the
    kernel launches it where the formula holds for the bound sizes, itself elsewhere."""
    base = gemm_manifest(variants=(VariantRef(("(K % 16) == (8)",), "variant"),))
    other = gemm_manifest(constants={"BM": 64, "BN": 64, "BK": 64, "STAGES": 3})
    root = write_bundle(tmp_path / "gemm", base, "// base\n")
    write_bundle(root / "variant", other, "// variant\n")
    kernel = load(root)
    (mine,) = kernel.others
    assert mine.manifest == other and mine.ptx == "// variant\n"
    for k, chosen in ((3000, True), (3072, False), (8, True), (24, True), (16, False)):
        got = kernel.variant_for(bind(kernel.manifest, gemm_args(k=k)))
        assert (got is mine) is chosen and (got is None) is not chosen, k
    assert mine.variant_for(bind(other, gemm_args(k=3000))) is None
    copy = kernel.save(tmp_path / "copy")
    assert load(copy).others[0].manifest == other  # saved with its variant
    with pytest.raises(ValueError, match="names 1 variant\\(s\\); got 0 variant kernel"):
        type(kernel)(base, "// base\n")
    (root / "variant" / "manifest.json").unlink()
    with pytest.raises(FileNotFoundError):
        load(root)


def test_variants_tried_in_order_every_condition_holding(tmp_path: Path) -> None:
    """Several variant(...) clauses: a launch runs the first whose conditions all hold."""
    refs = (
        VariantRef(("(K % 16) == (8)",), "variant"),
        VariantRef(("(K) <= (4096)", "(M * N) < (4 * num_sms)"), "variant2"),
    )
    base = gemm_manifest(variants=refs)
    assert Manifest.from_json(base.to_json()).variants == refs  # round trip
    root = write_bundle(tmp_path / "gemm", base, "// base\n")
    first = gemm_manifest(constants={"BM": 64, "BN": 64, "BK": 64, "STAGES": 3})
    second = gemm_manifest(constants={"BM": 64, "BN": 128, "BK": 32, "STAGES": 4})
    write_bundle(root / "variant", first, "// first\n")
    write_bundle(root / "variant2", second, "// second\n")
    kernel = load(root)
    one, two = kernel.others
    sms = {"num_sms": 132}
    cases = (
        ((8, 8, 3000), one),  # both hold: the first
        ((8, 8, 4096), two),
        ((8, 8, 8192), None),  # K too long for the second
        ((64, 64, 1024), None),  # 4096 elements: not under 4 * 132
        ((16, 32, 1024), two),
    )
    for (m, n, k), want in cases:
        b = bind(kernel.manifest, gemm_args(m=m, n=n, k=k), lambda device: sms)
        assert kernel.variant_for(b) is want, (m, n, k)
    with pytest.raises(ValueError, match="a variant's condition needs the device's SM count"):
        bind(kernel.manifest, gemm_args())
    copy = kernel.save(tmp_path / "copy")
    assert [k.ptx for k in load(copy).others] == ["// first\n", "// second\n"]


def test_a_manifest_of_one_variant_still_reads(tmp_path: Path) -> None:
    """Bundles written before variants were a list: `variant: {when, bundle}`."""
    data = gemm_manifest().to_json()
    data["variant"] = {"when": "(K % 16) == (8)", "bundle": "variant"}
    assert Manifest.from_json(data).variants == (VariantRef(("(K % 16) == (8)",), "variant"),)


@pytest.mark.parametrize(
    ("refs", "message"),
    [
        ((VariantRef((), "variant"),), "needs conditions and a bundle"),
        ((VariantRef(("K == 1",), ""),), "needs conditions and a bundle"),
        ((VariantRef(("Q == 1",), "v"),), "unknown symbols \\['Q'\\]"),
        ((VariantRef(("K == 1",), "../v"),), "must be a folder in the bundle"),
        ((VariantRef(("K == 1",), "v"), VariantRef(("K == 2",), "v")), "the same bundle"),
    ],
)
def test_variant_manifest_errors(refs: tuple[VariantRef, ...], message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        gemm_manifest(variants=refs)


def test_read_bundle_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a tilec bundle"):
        read_bundle(tmp_path)
    (tmp_path / "manifest.json").write_text("{nope")
    with pytest.raises(ManifestError, match="invalid JSON"):
        read_bundle(tmp_path)
    data = gemm_manifest().to_json()
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(FileNotFoundError, match="PTX file 'gemm.ptx'"):
        read_bundle(tmp_path)


def _broken(path: list[Any], value: Any) -> dict[str, Any]:
    data = gemm_manifest().to_json()
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["format"], "other", "not a tilec bundle manifest"),
        (["format_version"], 2, "format_version 2 is not supported"),
        (["entry"], KeyError, "manifest: missing field 'entry'"),
        (["params", 0, "dtype"], "f12", "param 'A': unknown dtype 'f12'"),
        (["params", 0, "kind"], "blob", "params\\[0\\] \\('A'\\): unknown kind 'blob'"),
        (["params", 0, "align"], 12, "param 'A': align 12 is not a power of two"),
        (["params", 0, "intent"], "both", "param 'A': intent 'both'"),
        (["params", 1, "strides"], [1], "param 'B': strides and shape have different ranks"),
        (["params", 1, "name"], "A", "params: duplicate names \\['A'\\]"),
        (["params", 3, "from"], ["Z", 0], "param 'M': 'from' names unknown tensor 'Z'"),
        (["params", 3, "from"], ["A", 2], "param 'M': 'from' dim 2 out of range"),
        (
            ["params", 3, "from"],
            "A",
            "params\\[3\\] \\('M'\\).from: expected \\[tensor name, dim\\]",
        ),
        (["params", 3, "dtype"], "u8", "param 'M': size dtype"),
        (["params", 7, "descriptor"], "nope", "param 'tmaA': no tma descriptor named 'nope'"),
        (["grid"], [1, 1], "grid and block: expected 3 entries"),
        (["grid", 0], "cdiv(M, BQ)", "grid.x: formula 'cdiv\\(M, BQ\\)' uses unknown symbols"),
        (["block", 1], "(", "block.y: formula '\\(': syntax error"),
        (["dynamic_smem"], "SMEM", "dynamic_smem: formula 'SMEM' uses unknown symbols"),
        (["constants", "BM"], 1.5, "constants: \\['BM'\\] must be integers"),
        (["ptx"], "../x.ptx", "ptx: '../x.ptx' must be a file name inside the bundle"),
        (["tma", 0, "tensor"], "Q", "tma 'tmaA': unknown tensor 'Q'"),
        (["tma", 0, "box"], [64], "tma 'tmaA': box rank differs"),
        (["params", 0, "shape"], ["M", 1.5], "params\\[0\\] \\('A'\\).shape: expected a list"),
    ],
)
def test_manifest_errors(path: list[Any], value: Any, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        Manifest.from_json(_broken(path, value))


def test_size_without_source_needs_a_shape_symbol() -> None:
    message = "param 'Q': no 'from' and no tensor shape or stride names 'Q'"
    with pytest.raises(ManifestError, match=message):
        gemm_manifest(params=(TensorParam("A", "f16", ("M",)), SizeParam("Q")))


# --- tensor adapters ------------------------------------------------------------------------


def test_cuda_array_interface_view() -> None:
    v = as_view(FakeCuda((4, 6), "<f4", ptr=4096, strides=(4, 16)), "X")
    assert (v.ptr, v.shape, v.strides, v.dtype) == (4096, (4, 6), (1, 4), "f32")
    v = as_view(FakeCuda((4, 6), "|i1"), "X")
    assert v.strides == (6, 1) and v.dtype == "i8"


def test_adapter_errors() -> None:
    with pytest.raises(TypeError, match="argument 'X': unsupported element type '<c8'"):
        as_view(FakeCuda((4,), "<c8"), "X")
    with pytest.raises(ValueError, match="argument 'X': byte strides \\(3,\\)"):
        as_view(FakeCuda((4,), "<f2", strides=(3,)), "X")
    with pytest.raises(TypeError, match="argument 'X': __cuda_array_interface__ version 1"):
        as_view(FakeCuda((4,), version=1), "X")
    with pytest.raises(TypeError, match="argument 'X': expected a CUDA tensor .* got list"):
        as_view([1.0, 2.0], "X")
    with pytest.raises(TypeError, match="argument 'X': unsupported numpy dtype complex64"):
        as_view(np.zeros(3, np.complex64), "X")


def test_numpy_view_is_staged() -> None:
    a = rng.standard_normal((3, 5)).astype(np.float16)[:, ::2]
    v = as_view(a, "A")
    assert (v.ptr, v.shape, v.strides, v.dtype) == (0, (3, 3), (3, 1), "f16")
    assert v.host is a


def test_cpu_dlpack_is_not_a_device_tensor() -> None:
    class CpuDl:
        def __dlpack__(self) -> None:
            raise AssertionError("must not be consumed")

        def __dlpack_device__(self) -> tuple[int, int]:
            return (1, 0)

    with pytest.raises(TypeError, match="argument 'Y': expected a CUDA tensor"):
        as_view(CpuDl(), "Y")


# --- binding --------------------------------------------------------------------------------


def gemm_args(m: int = 300, n: int = 200, k: int = 64) -> tuple[Any, ...]:
    a = FakeCuda((m, k), "<f2", ptr=0x10000)
    b = FakeCuda((k, n), "<f2", ptr=0x20000, strides=(2, 2 * k))
    c = FakeCuda((m, n), "<f4", ptr=0x30000)
    return a, b, c, 0.5


def test_bind_sizes_grid_and_slots() -> None:
    b = bind(gemm_manifest(), gemm_args())
    assert {k: b.symbols[k] for k in "MNK"} == {"M": 300, "N": 200, "K": 64}
    assert b.grid == (3, 4, 1) and b.block == (128, 1, 1)
    assert b.dynamic_smem == 3 * (128 + 64) * 64 * 2
    kinds = [s if isinstance(s, tuple) else (type(s).__name__, s.value) for s in b.slots]
    assert kinds == [
        ("tensor", "A"),
        ("tensor", "B"),
        ("tensor", "C"),
        ("c_int", 300),
        ("c_long", 200),
        ("c_long", 64),
        ("c_float", 0.5),
        ("tma", "tmaA"),
    ]
    assert isinstance(b.slots[3], ctypes.c_int32)
    assert b.tma["tmaA"] == {
        "dtype": "FLOAT16",
        "rank": 2,
        "global_dim": [64, 300],
        "global_strides": [128],
        "box_dim": [64, 128],
        "element_strides": [1, 1],
        "interleave": "NONE",
        "swizzle": "128B",
        "l2_promotion": "128B",
        "oob_fill": "NONE",
    }


def test_bind_errors_name_the_argument() -> None:
    m = gemm_manifest()
    a, b, c, alpha = gemm_args()
    cases: list[tuple[tuple[Any, ...], type[Exception], str]] = [
        ((a, b, c), TypeError, "gemm\\(\\) takes 4 arguments \\(A, B, C, alpha\\), got 3"),
        (
            (a, b, FakeCuda((300, 200), "<f2", ptr=0x30000), alpha),
            TypeError,
            "argument 'C': dtype f16, expected f32",
        ),
        ((a, FakeCuda((64,), "<f2"), c, alpha), ValueError, "argument 'B': rank 1"),
        (
            (a, b, FakeCuda((301, 200), "<f4"), alpha),
            ValueError,
            "argument 'C' dim 0 is 301, but M = 300 from argument 'A' dim 0",
        ),
        (
            (a, FakeCuda((64, 200), "<f2"), c, alpha),
            ValueError,
            "argument 'B': strides \\[200, 1\\] \\(in elements\\), expected strides \\[1, 'K'\\]",
        ),
        (
            (a, b, FakeCuda((300, 200), "<f4", ptr=0x30004), alpha),
            ValueError,
            "argument 'C': data pointer 0x30004 is not aligned to 16 bytes",
        ),
        (
            (a, b, FakeCuda((300, 200), "<f4", strides=(4, 1200)), alpha),
            ValueError,
            "argument 'C': strides \\[1, 300\\] .* expected contiguous row-major = \\[200, 1\\]",
        ),
        ((a, b, c, "x"), TypeError, "argument 'alpha': expected a number for f32, got str"),
        ((a, b, c, None), TypeError, "argument 'alpha'"),
        ((np.zeros((2, 2), np.complex64), b, c, alpha), TypeError, "argument 'A'"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            bind(m, args)


def test_bind_size_overflow_and_scalar_kinds() -> None:
    m = Manifest(
        entry="k",
        target="sm_80",
        params=(
            TensorParam("X", "f32", ("N",)),
            SizeParam("N", dtype="i32"),
            ScalarParam("h", "f16"),
            ScalarParam("b", "bf16"),
            ScalarParam("i", "i8"),
        ),
        grid=("cdiv(N, 256)", 1, 1),
        block=(256, 1, 1),
    )
    b = bind(m, (FakeCuda((1000,), "<f4"), 1.5, -2.0, -7))
    assert [s.value for s in b.slots[1:]] == [1000, 0x3E00, 0xC000, -7]
    assert b.grid == (4, 1, 1)
    with pytest.raises(ValueError, match="size 'N' = 2147483648 does not fit the kernel's i32"):
        bind(m, (FakeCuda((2**31,), "<f4"), 1.0, 1.0, 1))
    with pytest.raises(ValueError, match="argument 'i': 200 does not fit in i8"):
        bind(m, (FakeCuda((4,), "<f4"), 1.0, 1.0, 200))
    with pytest.raises(TypeError, match="argument 'i': expected an integer for i8, got float"):
        bind(m, (FakeCuda((4,), "<f4"), 1.0, 1.0, 2.0))
    assert bind(m, (FakeCuda((0,), "<f4"), 1.0, 1.0, 1)).grid == (0, 1, 1)


def batched_manifest() -> Manifest:
    """gemm_sm80_batched's parameters: every stride but the unit one is a runtime size."""
    return Manifest(
        entry="gemm_batched",
        target="sm_80",
        params=(
            TensorParam("A", "f16", ("L", "M", "K"), strides=("sa", "lda", 1), intent="in"),
            TensorParam("C", "f16", ("L", "M", "N"), strides=("sc", "ldc", 1)),
            TensorParam("bias", "f16", ("M", "N"), strides=(0, 1), intent="in"),
            *(SizeParam(s) for s in ("L", "M", "K", "sa", "lda", "N", "sc", "ldc")),
        ),
        grid=("cdiv(M, 128)", "cdiv(N, 128)", "L"),
        block=(128, 1, 1),
    )


def test_bind_stride_symbols_from_strided_tensors() -> None:
    m = batched_manifest()
    assert m.symbols() >= {"sa", "lda", "sc", "ldc"}
    l, rows, k, n = 3, 129, 72, 257
    # A as a (M, L, K) tensor transposed to (L, M, K); C as a slice of a wider (L, M, 300).
    a = FakeCuda((l, rows, k), "<f2", strides=(2 * k, 2 * l * k, 2))
    c = FakeCuda((l, rows, n), "<f2", strides=(2 * rows * 300, 2 * 300, 2))
    bias = FakeCuda((rows, n), "<f2", strides=(0, 2))  # bias.expand(M, N)
    b = bind(m, (a, c, bias))
    assert {s: b.symbols[s] for s in ("L", "M", "K", "N")} == {"L": 3, "M": 129, "K": 72, "N": 257}
    assert {s: b.symbols[s] for s in ("sa", "lda", "sc", "ldc")} == {
        "sa": k,
        "lda": l * k,
        "sc": rows * 300,
        "ldc": 300,
    }
    assert [s.value for s in b.slots[3:]] == [3, 129, 72, k, l * k, 257, rows * 300, 300]
    assert b.grid == (2, 3, 3)


def test_bind_strides_of_extent_one_and_errors() -> None:
    m = batched_manifest()
    # L = 1: frameworks report any batch stride; the symbol still gets a value.
    a = FakeCuda((1, 64, 32), "<f2", strides=(2, 64, 2))
    c = FakeCuda((1, 64, 16), "<f2")
    b = bind(m, (a, c, FakeCuda((64, 16), "<f2", strides=(0, 2))))
    assert (b.symbols["sa"], b.symbols["lda"], b.symbols["sc"]) == (1, 32, 1024)
    # A bias that is not broadcast along M is not what the kernel reads.
    with pytest.raises(
        ValueError,
        match="argument 'bias': strides \\[16, 1\\] .* expected strides \\[0, 1\\] = \\[0, 1\\]",
    ):
        bind(m, (a, c, FakeCuda((64, 16), "<f2")))
    # A stride symbol named by two tensors must agree.
    shared = Manifest(
        entry="k",
        target="sm_80",
        params=(
            TensorParam("X", "f32", ("M", "N"), strides=("ld", 1)),
            TensorParam("Y", "f32", ("M", "N"), strides=("ld", 1)),
            SizeParam("M"),
            SizeParam("N"),
            SizeParam("ld"),
        ),
        grid=(1, 1, 1),
        block=(32, 1, 1),
    )
    x, y = FakeCuda((4, 8), "<f4", strides=(64, 4)), FakeCuda((4, 8), "<f4")
    with pytest.raises(ValueError, match="argument 'Y': strides \\[8, 1\\] .* = \\[16, 1\\]"):
        bind(shared, (x, y))


def test_bf16_rounding_is_nearest_even() -> None:
    m = Manifest("k", "sm_80", (ScalarParam("b", "bf16"),), (1, 1, 1), (1, 1, 1))
    for value in rng.standard_normal(64) * 1000:
        bits = bind(m, (float(value),)).slots[0].value
        back = np.frombuffer(np.uint32(bits << 16).tobytes(), np.float32)[0]
        assert abs(back - np.float32(value)) <= abs(np.float32(value)) * 2**-8


def test_tma_rules() -> None:
    d = TmaDescriptor("t", "A", (64, 4))
    v = as_view(FakeCuda((128, 64), "<f2", strides=(256, 4)), "A")
    with pytest.raises(
        ValueError, match="tma 't' over argument 'A': the innermost stride must be 1"
    ):
        tma_encode_args(d, v, {})
    v = as_view(FakeCuda((128, 4), "<f2"), "A")
    with pytest.raises(ValueError, match="byte strides \\[8\\] must be multiples of 16"):
        tma_encode_args(d, v, {})
    v = as_view(FakeCuda((128, 64), "<f2"), "A")
    with pytest.raises(ValueError, match="innermost box extent x element size"):
        tma_encode_args(d, v, {})
    with pytest.raises(ValueError, match="box extents \\[512, 8\\] must be in 1..256"):
        tma_encode_args(TmaDescriptor("t", "A", (512, 8)), v, {})


def test_runtime_imports_no_mlir_or_llvmlite() -> None:
    code = (
        "import sys, tilec.runtime, tilec.runtime.kernel, tilec.runtime.driver\n"
        "import tilec.runtime.family, tilec.runtime.tuning, tilec.ops\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('mlir', 'llvmlite'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bind_refuses_tensors_past_32_bit_indices() -> None:
    """Kernels index in 32 bits: a tensor spanning 2^31 elements is refused before launch."""
    m = Manifest(
        entry="scale",
        target="sm_80",
        params=(TensorParam("x", "f32", ("N",)), SizeParam("N", ("x", 0))),
        grid=("cdiv(N, 128)", 1, 1),
        block=(128, 1, 1),
    )
    bind(m, (FakeCuda((2**31 - 1,), "<f4"),))  # the largest that fits
    with pytest.raises(ValueError, match="kernels index in 32 bits"):
        bind(m, (FakeCuda((2**31,), "<f4"),))


# --- launch plans (the driver replaced by a recorder: no GPU) -------------------------------


class Launches:
    """Stands in for the driver calls a launch makes and records each launch."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from tilec.runtime import driver

        self.calls: list[tuple[Any, ...]] = []
        self.packs: list[Any] = []  # what each launch passed the driver
        self.smem: list[int] = []
        monkeypatch.setattr(driver, "current_context", lambda device=None: 1)
        monkeypatch.setattr(driver, "load_function", lambda ptx, entry, smem: ("mod", "fn"))
        monkeypatch.setattr(driver, "set_max_dynamic_smem", lambda fn, n: self.smem.append(n))
        monkeypatch.setattr(driver, "launch", self.launch)

    def launch(self, fn: Any, grid: Any, block: Any, smem: int, stream: int, params: Any) -> None:
        values = params.values if isinstance(params, driver_module().Packed) else params
        self.calls.append((grid, block, smem, stream, [p.value for p in values]))
        self.packs.append(params)


def driver_module() -> Any:
    from tilec.runtime import driver

    return driver


def planned_manifest(alpha: str = "f32") -> Manifest:
    """gemm_manifest without its TMA descriptor (a TMA map depends on the pointer)."""
    params = gemm_manifest().params[:6] + (ScalarParam("alpha", alpha),)
    return gemm_manifest(tma=(), params=params)


def test_repeat_call_reuses_its_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    from tilec.runtime import Kernel
    from tilec.runtime import kernel as kernel_module

    seen = Launches(monkeypatch)
    k = Kernel(planned_manifest(), "ptx")
    k(*gemm_args())
    assert k.plans == 1
    # Same shapes, strides and alignment, new pointers and alpha: no second bind.
    monkeypatch.setattr(kernel_module, "bind", lambda *a: pytest.fail("bound again"))
    a, b, c, _ = gemm_args()
    a.__cuda_array_interface__["data"] = (0x11000, False)
    c.__cuda_array_interface__["data"] = (0x40000, False)
    k(a, b, c, 2.5)
    assert k.plans == 1
    first, second = seen.calls
    assert first[:3] == second[:3] == ((3, 4, 1), (128, 1, 1), 3 * (128 + 64) * 64 * 2)
    assert first[4] == [0x10000, 0x20000, 0x30000, 300, 200, 64, 0.5]
    assert second[4] == [0x11000, 0x20000, 0x40000, 300, 200, 64, 2.5]
    assert seen.smem == [3 * (128 + 64) * 64 * 2]  # the function's limit raised once


def test_a_new_signature_binds_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from tilec.runtime import Kernel

    seen = Launches(monkeypatch)
    k = Kernel(planned_manifest(), "ptx")
    k(*gemm_args())
    k(*gemm_args(m=1000))  # another shape
    assert k.plans == 2 and seen.calls[-1][0] == (8, 4, 1) and seen.calls[-1][4][3] == 1000
    a, b, c, alpha = gemm_args()
    b.__cuda_array_interface__["strides"] = (2, 2 * 128)  # a padded leading dimension
    with pytest.raises(ValueError, match="argument 'B': strides"):
        k(a, b, c, alpha)
    c.__cuda_array_interface__["data"] = (0x30008, False)  # misaligned: checked again each time
    for _ in range(2):
        with pytest.raises(ValueError, match="argument 'C': data pointer 0x30008"):
            k(*gemm_args()[:2], c, alpha)
    with pytest.raises(TypeError, match="argument 'alpha': expected a number"):
        k(*gemm_args()[:3], "0.5")
    assert len(seen.calls) == 2 and k.plans == 2
    small = Kernel(planned_manifest(alpha="i8"), "ptx")
    small(*gemm_args()[:3], 5)
    with pytest.raises(ValueError, match="argument 'alpha': 500 does not fit in i8"):
        small(*gemm_args()[:3], 500)  # the planned path still checks each scalar
    assert small.plans == 1 and len(seen.calls) == 3
    with pytest.raises(TypeError, match="argument 'alpha': expected an integer for i8"):
        small(*gemm_args()[:3], 5.0)  # equal to the 5 converted before, but not an integer
    small(*gemm_args()[:3], 6)
    assert [c[4][-1] for c in seen.calls[2:]] == [5, 6]


def test_an_integer_scalar_sizes_the_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """A signed integer scalar is a launch symbol (`grid(cdiv(rows, BM), ...)`): its value
    is part of a call's signature, so each value launches its own grid; a float one is not."""
    from tilec.runtime import Kernel

    seen = Launches(monkeypatch)
    params = (*planned_manifest().params, ScalarParam("rows", "i32"))
    m = gemm_manifest(tma=(), params=params, grid=("cdiv(rows, BM)", "cdiv(N, BN)", 1))
    assert "rows" in m.symbols() and "alpha" not in m.symbols()
    assert bind(m, (*gemm_args(), 1000)).grid == (8, 4, 1)
    k = Kernel(m, "ptx")
    for rows in (1000, 1000, 129, 0):
        k(*gemm_args(), rows)
    assert [c[0] for c in seen.calls] == [(8, 4, 1), (8, 4, 1), (2, 4, 1)]  # no blocks: none
    assert k.plans == 3 and seen.calls[-1][4][-1] == 129
    with pytest.raises(ManifestError, match=r"unknown symbols \['alpha'\]"):
        validate(gemm_manifest(tma=(), params=params, grid=("cdiv(alpha, BM)", 1, 1)))


def test_a_repeated_call_reuses_its_packed_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    from tilec.runtime import Kernel

    seen = Launches(monkeypatch)
    k = Kernel(planned_manifest(), "ptx")
    args = gemm_args()
    for _ in range(3):
        k(*args)
    assert seen.packs[0] is seen.packs[1] is seen.packs[2], (
        "the same pointers and alpha: packed once"
    )
    k(*args[:3], -0.0)  # equal to 0.0 but not the same bits: packed on its own
    k(*args[:3], 0.0)
    assert [c[4][-1] for c in seen.calls[3:]] == [-0.0, 0.0]
    assert str(seen.calls[3][4][-1]) == "-0.0" and seen.packs[3] is not seen.packs[4]
    moved = gemm_args()
    moved[2].__cuda_array_interface__["data"] = (0x40000, False)
    k(*moved)
    assert seen.calls[-1][4][:3] == [0x10000, 0x20000, 0x40000] and k.plans == 1
    k(*args)  # back to the first pointers: the first packing again
    assert seen.packs[-1] is seen.packs[0] and len(seen.calls) == 7
    with pytest.raises(TypeError, match="argument 'alpha': expected a number"):
        k(*args[:3], "0.5")  # the scalar is still checked at every call


class FakeMaps:
    """Stands in for the driver calls of the tensor-map store (runtime/maps.py): device memory
    as a dict of 128-byte slots, a capture switched on and off by the test. `check(launch)`
    asserts that every map a launch passed holds, on the device, the map of its pointer (or,
    in a capture, will once the graph's copy runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from tilec.runtime import driver

        self.device: dict[int, bytes] = {}
        self.host: dict[int, bytes] = {}
        self.graph: dict[int, int] = {}  # device slot → host slot a captured copy reads
        self.allocs: list[int] = []
        self.capture = False
        self._next = iter(range(0x100000, 0x10000000, 0x100000))
        self.encoded: list[int] = []
        monkeypatch.setattr(driver, "encode_tma_tiled", self.encode)
        monkeypatch.setattr(driver, "alloc", self.alloc)
        monkeypatch.setattr(driver, "alloc_pinned", self.alloc)
        monkeypatch.setattr(driver, "write_host", self.host.__setitem__)
        monkeypatch.setattr(driver, "copy_to_device", self.copy)
        monkeypatch.setattr(driver, "capturing", lambda stream: self.capture)
        monkeypatch.setattr(driver, "synchronize", lambda stream: None)
        monkeypatch.setattr(driver, "synchronize_context", lambda: None)
        monkeypatch.setattr(driver, "to_device", lambda host, stream: 0x50000)
        monkeypatch.setattr(driver, "to_host", lambda ptr, host, stream: None)
        monkeypatch.setattr(driver, "free", lambda ptr: None)

    def encode(self, args: dict, address: int) -> bytes:
        self.encoded.append(address)
        return address.to_bytes(8, "little") * 16

    def alloc(self, nbytes: int) -> int:
        assert not self.capture, "no allocation inside a capture"
        self.allocs.append(nbytes)
        return next(self._next)

    def copy(self, device: int, host: int, nbytes: int, stream: int) -> None:
        if self.capture:
            self.graph[device] = host
        else:
            self.device[device] = self.host[host]

    def replay(self) -> None:
        for device, host in self.graph.items():
            self.device[device] = self.host[host]

    def holds(self, address: int, ptr: int, captured: bool = False) -> bool:
        want = ptr.to_bytes(8, "little") * 16
        if captured:
            return self.host[self.graph[address]] == want
        return self.device.get(address) == want


def test_host_arrays_are_not_planned_tma_maps_encode_once_per_pointer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tilec.runtime import Kernel

    seen = Launches(monkeypatch)
    fake = FakeMaps(monkeypatch)
    k = Kernel(planned_manifest(), "ptx")
    a, b, _, alpha = gemm_args()
    k(a, b, np.zeros((300, 200), np.float32), alpha)
    assert k.plans == 0
    tma = Kernel(gemm_manifest(), "ptx")
    args = gemm_args()
    for _ in range(3):
        tma(*args)
    assert tma.plans == 1
    assert fake.encoded == [0x10000], "one map, encoded once"
    assert fake.holds(seen.calls[-1][4][-1], 0x10000)
    first = seen.calls[-1]
    moved = gemm_args()
    moved[0].__cuda_array_interface__["data"] = (0x90000, False)
    tma(*moved)
    assert fake.encoded[-1] == 0x90000 and tma.plans == 1
    assert seen.calls[-1] != first, "a new pointer gets its own map"
    assert fake.holds(seen.calls[-1][4][-1], 0x90000)
    # Past MAP_LIMIT copies the slots are reused (but for 0x10000's: its launch was repeated,
    # and a repeat may be a capture): a ready launch that passed one is dropped with it, and the
    # next call with those pointers makes (and passes) a new copy.
    from tilec.runtime import maps

    monkeypatch.setattr(maps, "MAP_LIMIT", 1)
    third = gemm_args()
    third[0].__cuda_array_interface__["data"] = (0xA0000, False)
    tma(*third)  # the third map: the slot of 0x90000's is reused
    assert fake.holds(seen.calls[-1][4][-1], 0xA0000)
    tma(*args)
    assert fake.encoded[-1] == 0x10000
    assert fake.holds(seen.calls[-1][4][-1], 0x10000), "a reused slot is never passed stale"
    assert len(fake.allocs) == 2, "one arena (device and pinned host) for all of them"


def test_a_map_flush_midway_through_a_launch_makes_the_maps_before_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tilec.runtime import Kernel, maps

    seen = Launches(monkeypatch)
    fake = FakeMaps(monkeypatch)
    monkeypatch.setattr(maps, "MAP_LIMIT", 2)
    m = gemm_manifest()
    two = gemm_manifest(
        params=(*m.params, TmaParam("tmaC", "tmaC")),
        tma=(*m.tma, TmaDescriptor("tmaC", "C", ("BM", "BN"))),
    )
    k = Kernel(two, "ptx")
    args = gemm_args()
    k(*args)  # maps of A and C: the limit reached
    moved = gemm_args()
    moved[2].__cuda_array_interface__["data"] = (0x40000, False)
    k(*moved)  # A's map is made; C's reuses its slot, so A's is made again
    a_map, c_map = seen.calls[-1][4][-2:]
    assert fake.holds(a_map, 0x10000) and fake.holds(c_map, 0x40000)
    for call in (args, moved):  # and unplanned (a host array), the same
        bound = (*call[:2], np.zeros((300, 200), np.float32), call[3])
        k(*bound)
        a_map, c_map = seen.calls[-1][4][-2:]
        assert fake.holds(a_map, 0x10000) and fake.holds(c_map, 0x50000)  # C staged at 0x50000


def test_tma_maps_in_a_cuda_graph_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launch captured into a CUDA graph with new pointers allocates nothing (the capture
    would fail), its maps are copied by the graph, their slots are never reused, and a call
    outside the capture with those pointers copies them first rather than reusing the
    captured launch."""
    from tilec.runtime import Kernel, maps

    seen = Launches(monkeypatch)
    fake = FakeMaps(monkeypatch)
    k = Kernel(gemm_manifest(), "ptx")
    k(*gemm_args())  # warm-up: the arena is allocated
    allocs = len(fake.allocs)
    fake.capture = True
    captured = gemm_args()
    captured[0].__cuda_array_interface__["data"] = (0x70000, False)
    k(*captured)
    k(*captured)
    graph_map = seen.calls[-1][4][-1]
    assert len(fake.allocs) == allocs
    assert fake.holds(graph_map, 0x70000, captured=True) and not fake.holds(graph_map, 0x70000)
    fake.capture = False
    k(*captured)  # before any replay: copied now
    assert seen.calls[-1][4][-1] == graph_map and fake.holds(graph_map, 0x70000)
    monkeypatch.setattr(maps, "MAP_LIMIT", 1)
    for ptr in (0x80000, 0x90000, 0xA0000):  # flushes: the graph's slot stays its own
        other = gemm_args()
        other[0].__cuda_array_interface__["data"] = (ptr, False)
        k(*other)
        assert seen.calls[-1][4][-1] != graph_map and fake.holds(seen.calls[-1][4][-1], ptr)
    fake.replay()
    assert fake.holds(graph_map, 0x70000)
    monkeypatch.setattr(maps, "SPARE", 0)
    fresh = Kernel(gemm_manifest(), "ptx")
    fake.capture = True
    from tilec.runtime import driver

    with pytest.raises(driver.CudaError, match="launch the captured calls once before"):
        fresh(*gemm_args())


def test_a_capture_of_a_ready_launch_keeps_its_maps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm up, then capture: the captured launch is a ready one (pointers seen before), which
    does not pass through the map store, yet the graph reads its maps at every replay. Its
    first repeat holds them, so later flushes (new pointers past MAP_LIMIT) never reuse them;
    a launch made once and never repeated gives its slots back."""
    from tilec.runtime import Kernel, maps

    seen = Launches(monkeypatch)
    fake = FakeMaps(monkeypatch)
    k = Kernel(gemm_manifest(), "ptx")
    args = gemm_args()
    k(*args)
    k(*args)  # the warm-up's repeat
    fake.capture = True
    k(*args)  # captured from the ready launch
    graph_map = seen.calls[-1][4][-1]
    fake.capture = False
    once = gemm_args()
    once[0].__cuda_array_interface__["data"] = (0x60000, False)
    k(*once)  # made once, never repeated
    once_map = seen.calls[-1][4][-1]
    monkeypatch.setattr(maps, "MAP_LIMIT", 1)
    passed = []
    for ptr in (0x80000, 0x90000, 0xA0000, 0xB0000):  # each a flush
        other = gemm_args()
        other[0].__cuda_array_interface__["data"] = (ptr, False)
        k(*other)
        passed.append(seen.calls[-1][4][-1])
        assert fake.holds(passed[-1], ptr)
    free = {device for slots in k._maps._free.values() for device, _ in slots}
    assert graph_map not in passed and graph_map not in free and fake.holds(graph_map, 0x10000)
    assert once_map in passed, "a slot no launch repeated is reused"


# --- what a launch must not get wrong silently -------------------------------------------------


def softmax_manifest(requires: tuple[Requirement, ...]) -> Manifest:
    return Manifest(
        entry="softmax",
        target="sm_80",
        params=(
            TensorParam("X", "f16", ("R", "N"), strides=("ldx", 1), intent="in"),
            TensorParam("Y", "f16", ("R", "N"), strides=("ldy", 1)),
        ),
        grid=("R", 1, 1),
        block=(128, 1, 1),
        constants={"COLS": 4096},
        requires=requires,
    )


def test_a_size_past_what_the_build_handles_is_refused_with_the_reason() -> None:
    m = softmax_manifest((Requirement("N", "COLS", "X is tiled by (1, 4096) at coordinate 0"),))
    ok = bind(m, (FakeCuda((3, 4096), "<f2"), FakeCuda((3, 4096), "<f2")))
    assert ok.grid == (3, 1, 1)
    with pytest.raises(ValueError, match=r"N = 4097, but this build handles N <= COLS = 4096"):
        bind(m, (FakeCuda((3, 4097), "<f2"), FakeCuda((3, 4097), "<f2")))
    with pytest.raises(ManifestError, match=r"requires\[0\].at_most"):
        softmax_manifest((Requirement("N", "ROWS"),))
    # A literal bound is not repeated ("N <= 64 = 64" before).
    m = softmax_manifest((Requirement("N", "64"),))
    with pytest.raises(ValueError, match=r"N = 65, but this build handles N <= 64 only$"):
        bind(m, (FakeCuda((3, 65), "<f2"), FakeCuda((3, 65), "<f2")))


def test_a_written_tensor_may_not_overlap_itself_or_another() -> None:
    m = softmax_manifest(())
    x = FakeCuda((4, 64), "<f2")
    with pytest.raises(ValueError, match="argument 'Y': the kernel writes it, but its strides"):
        bind(m, (x, FakeCuda((4, 64), "<f2", strides=(0, 2))))  # y.expand(4, 64)
    with pytest.raises(ValueError, match="revisit memory along dim 0"):
        bind(m, (x, FakeCuda((4, 64), "<f2", strides=(2 * 32, 2))))  # rows overlap by half
    bind(m, (FakeCuda((4, 64), "<f2", strides=(0, 2)), FakeCuda((4, 64), "<f2")))  # read: fine
    both = Manifest(
        entry="two",
        target="sm_80",
        params=(TensorParam("P", "f32", ("N",), align=4), TensorParam("Q", "f32", ("N",), align=4)),
        grid=(1, 1, 1),
        block=(32, 1, 1),
    )
    p = FakeCuda((64,), "<f4", ptr=0x10000)
    q = FakeCuda((64,), "<f4", ptr=0x10000 + 256)  # just past P's 256 bytes
    bind(both, (p, q))
    q.__cuda_array_interface__["data"] = (0x10000 + 252, False)  # shares P's last element
    with pytest.raises(ValueError, match="'P' and 'Q': the kernel writes both and their memory"):
        bind(both, (p, q))


def test_a_reversed_view_is_refused_even_where_strides_are_free() -> None:
    # gemm_sm80_batched binds its strides from the tensors; a negative one (cupy's x[::-1])
    # would index below the base pointer: refused, never bound.
    m = batched_manifest()
    l, rows, k, n = 3, 129, 72, 257
    a = FakeCuda((l, rows, k), "<f2", strides=(-2 * rows * k, 2 * k, 2))
    c = FakeCuda((l, rows, n), "<f2", strides=(2 * rows * n, 2 * n, 2), ptr=0x7F1000000000)
    bias = FakeCuda((rows, n), "<f2", strides=(0, 2))
    with pytest.raises(ValueError, match=r"argument 'A': a negative stride \[-9288, 72, 1\]"):
        bind(m, (a, c, bias))


def test_a_persistent_grid_binds_num_sms_from_the_device() -> None:
    m = gemm_manifest(grid=("min(num_sms, cdiv(M, BM) * cdiv(N, BN))", 1, 1))
    seen: list[int | None] = []

    def device(ordinal: int | None) -> dict[str, int]:
        seen.append(ordinal)
        return {"num_sms": 5}

    assert bind(m, gemm_args(), device).grid == (5, 1, 1)
    assert bind(m, gemm_args(m=100, n=60), device).grid == (1, 1, 1)
    assert len(seen) == 2, "asked the device once per binding"
    with pytest.raises(ValueError, match="needs the device's SM count"):
        bind(m, gemm_args())


@pytest.mark.parametrize(
    ("cluster", "resident", "sms"),
    [(1, None, 132), (2, 66, 132), (4, 30, 120), (8, 16, 128), (4, 0, 132), (8, -1, 128)],
)
def test_a_cluster_kernel_binds_num_sms_to_the_clusters_that_fit(
    monkeypatch: pytest.MonkeyPatch, cluster: int, resident: int | None, sms: int
) -> None:
    """num_sms of a kernel of clusters: the blocks of the clusters the device holds at once
    (132 SMs; 30 clusters of 4 fit: 120 blocks, one wave), the SMs in whole clusters where the
    driver reports none (0) or the query fails (-1), the SM count without clusters (no
    occupancy query)."""
    from tilec.runtime import driver
    from tilec.runtime.kernel import Kernel

    asked: list[tuple[Any, ...]] = []
    monkeypatch.setattr(driver, "current_context", lambda device=None: 7)
    monkeypatch.setattr(driver, "sm_count", lambda device=None: 132)

    def load_function(ptx: str, entry: str, smem: int) -> tuple[str, str]:
        asked.append(("load", smem))  # the function allows the kernel's shared memory
        return "module", "fn"

    monkeypatch.setattr(driver, "load_function", load_function)

    def clusters(fn: Any, block: Any, smem: int, size: int, grid_x: int) -> int:
        asked.append((fn, block, smem, size, grid_x))
        if resident == -1:
            raise driver.CudaError("cuOccupancyMaxActiveClusters failed")
        return resident or 0

    monkeypatch.setattr(driver, "max_active_clusters", clusters)
    m = gemm_manifest(
        grid=("num_sms", 1, 1), cluster=cluster, dynamic_smem=200_000, block=(384, 1, 1)
    )
    kernel = Kernel(m, "// ptx")
    assert kernel.device_symbols(None) == {"num_sms": sms}
    assert bind(m, gemm_args(), kernel.device_symbols).grid == (sms, 1, 1)
    if cluster == 1:
        assert asked == []
    else:  # asked once per context, with the kernel's launch shape and shared memory
        whole = 132 - 132 % cluster  # the grid asked about: SMs in whole clusters
        assert asked == [("load", 200_000), ("fn", (384, 1, 1), 200_000, cluster, whole)]


def test_with_sms_holds_num_sms_down_for_the_kernel_and_its_variants(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Kernel.with_sms(n): num_sms reads min(n, the device's SMs) in the grid and in variant
    conditions, for the variants too; a kernel of clusters takes the whole clusters among the n
    (7 SMs, clusters of 2: 6 asked about), and a variant whose clusters do not fit is not
    launched; the kernel it came from keeps every SM."""
    from tilec.runtime import driver
    from tilec.runtime.kernel import Kernel

    monkeypatch.setattr(driver, "sm_count", lambda device=None: 132)
    refs = (VariantRef(("(M * N) < (3 * num_sms)",), "variant"),)
    root = write_bundle(tmp_path / "g", gemm_manifest(grid=("num_sms", 1, 1), variants=refs), "")
    write_bundle(root / "variant", gemm_manifest(grid=("num_sms", 2, 1)), "// v\n")
    kernel = load(root)
    five = kernel.with_sms(5)
    assert (five.sms, five.others[0].sms, kernel.sms) == (5, 5, None)
    assert five.manifest is kernel.manifest and five.ptx == kernel.ptx
    small = gemm_args(m=1, n=12)  # 12 elements: under 3 * 5, not under 3 * 4
    for k, grid, variant in ((kernel, 132, True), (five, 5, True), (kernel.with_sms(4), 4, False)):
        b = bind(k.manifest, small, k.device_symbols)
        assert b.grid == (grid, 1, 1) and (k.variant_for(b) is not None) == variant
        assert bind(k.others[0].manifest, small, k.others[0].device_symbols).grid[0] == grid
    assert kernel.with_sms(500).device_symbols(None) == {"num_sms": 132}
    asked: list[int] = []
    monkeypatch.setattr(driver, "current_context", lambda device=None: 7)
    monkeypatch.setattr(driver, "load_function", lambda ptx, entry, smem: ("module", "fn"))
    monkeypatch.setattr(
        driver, "max_active_clusters", lambda fn, block, smem, size, x: asked.append(x) or 66
    )
    m = gemm_manifest(grid=("num_sms", 1, 1), cluster=2, block=(384, 1, 1), dynamic_smem=9)
    pairs = Kernel(m, "")
    assert pairs.with_sms(7).device_symbols(None) == {"num_sms": 6} and asked == [6]
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="a positive SM count"):
            kernel.with_sms(bad)
    with pytest.raises(ValueError, match="clusters of 2 blocks; 1 SMs hold none"):
        pairs.with_sms(1)
    # A variant of clusters larger than the SMs the kernel may take is passed over.
    refs = (VariantRef(("(K) > (0)",), "variant"),)
    root = write_bundle(tmp_path / "c", gemm_manifest(grid=("num_sms", 1, 1), variants=refs), "")
    write_bundle(root / "variant", m, "// pairs\n")
    kernel = load(root)
    b = bind(kernel.manifest, small, kernel.with_sms(1).device_symbols)
    assert (
        kernel.with_sms(2).variant_for(b) is not None and kernel.with_sms(1).variant_for(b) is None
    )


def test_a_tensor_map_over_an_empty_tensor_is_null() -> None:
    """The driver cannot encode a map over an empty tensor; no box lies inside one, so the
    kernel gets a null map and never reads it (a GEMM with K = 0 only stores zeros)."""
    a = FakeCuda((300, 0), "<f2", ptr=0x10000)
    b = FakeCuda((0, 200), "<f2", ptr=0x20000, strides=(2, 2))
    c = FakeCuda((300, 200), "<f4", ptr=0x30000)
    bound = bind(gemm_manifest(), (a, b, c, 0.5))
    assert bound.tma == {"tmaA": None}
    assert bind(gemm_manifest(), gemm_args()).tma["tmaA"] is not None


def test_random_args_lay_out_a_declared_contiguous_mode_last() -> None:
    """random_args allocates a tensor whose layout makes a mode other than the last contiguous
    (the transpose of a row-major one, an MN-major operand) with that mode innermost, so the
    runtime's layout check accepts it; other tensors keep their row-major order."""
    from tilec.runtime.measure import unit_mode_last

    def order(shape: tuple[str, ...], strides: tuple[object, ...] | None) -> list[int]:
        return unit_mode_last(TensorParam("Z", "f16", shape, strides), len(shape))

    assert order(("M", "N"), (1, "M")) == [1, 0]
    assert order(("M", "N"), ("N", 1)) == [0, 1]
    assert order(("M", "N"), None) == [0, 1]
    assert order(("L", "M", "N"), ("MN", 1, "M")) == [0, 2, 1]
    assert order(("M", "N"), (0, 1)) == [0, 1]  # a broadcast row: still row-major
