"""Manifests from tile IR: parameters, bindings, grid and block of every example kernel."""

import re
from pathlib import Path

import pytest

from tilec.build import kernels_of
from tilec.driver import CompileOptions, compile_file
from tilec.runtime.bundle import Manifest, ScalarParam, SizeParam, TensorParam

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def infos(name: str, **params: str):  # noqa: ANN201
    artifact = compile_file(str(EXAMPLES / name), CompileOptions(emit="tile", params=params))
    return kernels_of(artifact.value)


def test_vadd_manifest_params_bind_n_from_every_tensor() -> None:
    (info,) = infos("vadd.tile")
    assert info.name == "vadd" and info.target == "sm_80"
    assert info.threads == (256, 1, 1)
    assert info.grid[0] == "cdiv(N, 4096)"
    tensors = [p for p in info.params if isinstance(p, TensorParam)]
    assert [(t.name, t.dtype, t.shape, t.strides) for t in tensors] == [
        ("x", "f32", ("N",), None),
        ("y", "f32", ("N",), None),
        ("out", "f32", ("N",), None),
    ]
    assert [p.name for p in info.params if isinstance(p, SizeParam)] == ["N"]


def test_parameters_override_reaches_the_grid_and_constants() -> None:
    (info,) = infos("vadd.tile", BLOCK="1024")
    assert info.grid[0] == "cdiv(N, 1024)"
    assert info.constants["BLOCK"] == 1024


@pytest.mark.parametrize(
    "name",
    [
        "transpose.tile",
        "softmax.tile",
        "gemm_sm80.tile",
        "gemm_sm80_bias_relu.tile",
        "gemm_sm80_batched.tile",
    ],
)
def test_every_example_gives_a_valid_manifest(name: str) -> None:
    for info in infos(name):
        manifest = Manifest(
            entry=info.name,
            target=info.target,
            params=info.params,
            grid=info.grid,
            block=info.threads,
            constants=info.constants,
        )
        shapes = {p.name: p.shape for p in manifest.tensors()}
        rank = 3 if "batched" in name else 2
        assert all(len(s) == rank for s in shapes.values())
        assert manifest.symbols() >= {p.name for p in info.params if isinstance(p, SizeParam)}


def test_explicit_layouts_give_their_strides(tmp_path: Path) -> None:
    source = tmp_path / "strided.tile"
    source.write_text(
        "kernel k(A: f16[(L, M, K):(sa, lda, 1)], bias: f16[(M, K):(0, 1)], X: f32[M, 4],\n"
        "         Y: f32[(M, 4):(4, 1)], Z: f32[(M, 4):(1, M)])\n"
        "  grid(L) threads(32) target(sm_80) {}\n"
    )
    (info,) = kernels_of(compile_file(str(source), CompileOptions(emit="tile")).value)
    strides = {p.name: p.strides for p in info.params if isinstance(p, TensorParam)}
    # Runtime strides by name, static ones as numbers; row-major ones stay null.
    assert strides == {
        "A": ("sa", "lda", 1),
        "bias": (0, 1),
        "X": None,
        "Y": None,
        "Z": (1, "M"),
    }
    manifest = Manifest(info.name, info.target, info.params, info.grid, info.threads)
    assert manifest.symbols() >= {"sa", "lda"}


def test_epilogue_bias_is_a_broadcast_and_counts_its_data_once() -> None:
    from tilec.runtime.measure import bytes_moved, stored

    (info,) = infos("gemm_sm80_bias_relu.tile")
    manifest = Manifest(info.name, info.target, info.params, info.grid, info.threads)
    bias = next(p for p in manifest.tensors() if p.name == "bias")
    assert (bias.shape, bias.strides) == (("M", "N"), (0, 1))
    assert stored(bias, (300, 200)) == (1, 200)  # what `tilec run` expands to (300, 200)
    # A 300×64, B 200×64, C 300×200 and 200 bias values, 2 bytes each.
    assert bytes_moved(manifest, {"M": 300, "N": 200, "K": 64}) == 2 * (
        300 * 64 + 200 * 64 + 300 * 200 + 200
    )


def test_gemm_scalar_alpha_is_a_scalar_parameter() -> None:
    (info,) = infos("gemm_sm80.tile")
    scalars = [p for p in info.params if isinstance(p, ScalarParam)]
    assert [(s.name, s.dtype) for s in scalars] == [("alpha", "f32")]


def test_compile_api_returns_a_kernel_and_hits_the_cache(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    import tilec

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    kernel = tilec.compile(str(EXAMPLES / "vadd.tile"), BLOCK=1024)
    assert kernel.manifest.entry == "vadd"
    assert kernel.manifest.grid[0] == "cdiv(N, 1024)"
    assert ".visible .entry vadd(" in kernel.ptx
    bundles = list(tmp_path.glob("*/*/manifest.json"))
    assert len(bundles) == 1
    again = tilec.compile(str(EXAMPLES / "vadd.tile"), BLOCK=1024)
    assert again.manifest == kernel.manifest
    assert len(list(tmp_path.glob("*/*/manifest.json"))) == 1  # served from the cache
    other = tilec.compile(str(EXAMPLES / "vadd.tile"), BLOCK=2048, arch="sm_90a")
    assert other.manifest.target == "sm_90a"
    assert len(list(tmp_path.glob("*/*/manifest.json"))) == 2


def test_build_cli_reports_a_missing_file(capsys) -> None:  # noqa: ANN001
    from tilec.cli import main

    assert main(["build", "no/such.tile", "-o", "build/never"]) == 1
    assert "error: 'no/such.tile' does not exist" in capsys.readouterr().err


def test_build_reports_failures_and_still_builds_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    from tilec.cli import main

    bad = tmp_path / "bad.tile"
    bad.write_text("kernel k( {\n}\n")
    out = tmp_path / "bundles"
    old = os.umask(0o022)
    try:
        code = main(["build", str(bad), str(EXAMPLES / "vadd.tile"), "-o", str(out)])
    finally:
        os.umask(old)
    _, err = capsys.readouterr()
    assert code == 1
    assert f"{bad}:1:" in err  # the failure, located
    assert err.rstrip().splitlines()[-1] == f"tilec build: 1 of 2 inputs failed: {bad}"
    assert (out / "vadd" / "manifest.json").is_file()  # built after the failure
    assert (out / "vadd").stat().st_mode & 0o777 == 0o755  # not mkdtemp's 0700


def test_build_writes_the_wide_variant_beside_the_ordinary_ptx(tmp_path: Path) -> None:
    from tilec.build import build, compile_tile
    from tilec.runtime import load

    compiled = compile_tile(str(EXAMPLES / "vadd.tile"), {}, "sm_80")
    (manifest,) = compiled.manifests
    assert manifest.wide_ptx_file == "vadd.wide.ptx"
    # N (parameter 3) is an i64 in both; the ordinary PTX reads its low half (32-bit index),
    # the wide one all of it.
    n_param = r"ld\.param\.b{}\s+%r\w*\d+, \[vadd_param_3\]"
    assert re.search(n_param.format(32), compiled.ptx)
    assert re.search(n_param.format(64), compiled.wide_ptx)
    assert "ld.param.b32" not in compiled.wide_ptx
    assert ".visible .entry vadd(" in compiled.wide_ptx
    (bundle,) = build(str(EXAMPLES / "vadd.tile"), tmp_path, {}, "sm_80")
    kernel = load(bundle)
    assert (kernel.ptx, kernel.wide_ptx) == (compiled.ptx, compiled.wide_ptx)
