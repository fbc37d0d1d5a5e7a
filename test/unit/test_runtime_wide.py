"""The wide (64-bit index) variant: manifests naming it, binding choosing it, launches using it."""

from __future__ import annotations

import ctypes
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_runtime import FakeCuda, Launches

from tilec.runtime import Kernel, load
from tilec.runtime.binding import INDEX_LIMIT, bind
from tilec.runtime.bundle import (
    Manifest,
    ManifestError,
    SizeParam,
    TensorParam,
    read_bundle,
    read_wide_ptx,
    write_bundle,
)

HUGE = 2**31 + 4099  # the GPU test's vadd length: past the 32-bit index by a ragged tail


def scale_manifest(wide: bool = True, size_dtype: str = "i64") -> Manifest:
    return Manifest(
        entry="scale",
        target="sm_80",
        params=(TensorParam("x", "f32", ("N",)), SizeParam("N", ("x", 0), size_dtype)),
        grid=("cdiv(N, 128)", 1, 1),
        block=(128, 1, 1),
        wide_ptx_file="scale.wide.ptx" if wide else "",
    )


def test_bind_picks_the_wide_variant_from_the_sizes() -> None:
    m = scale_manifest()
    small = bind(m, (FakeCuda((INDEX_LIMIT - 1,), "<f4"),))
    assert not small.wide
    big = bind(m, (FakeCuda((HUGE,), "<f4"),))
    assert big.wide
    # The size goes in whole, as the kernel's i64: never the low 32 bits.
    assert isinstance(big.slots[1], ctypes.c_int64) and big.slots[1].value == HUGE
    assert big.grid == (-(-HUGE // 128), 1, 1)
    # A few elements spread past 2^31 by their stride need 64-bit offsets too.
    spread = FakeCuda((3,), "<f4", strides=(4 * 2**30,))
    with pytest.raises(ValueError, match="strides"):  # the kernel takes x contiguous
        bind(m, (spread,))
    strided = replace(m, params=(TensorParam("x", "f32", ("N",), strides=("s",)), m.params[1]))
    assert bind(strided, (spread,)).wide
    assert not bind(strided, (FakeCuda((3,), "<f4", strides=(4 * 2**29,)),)).wide


def test_no_wide_variant_is_a_clear_error() -> None:
    m = scale_manifest(wide=False)
    assert not bind(m, (FakeCuda((INDEX_LIMIT - 1,), "<f4"),)).wide
    with pytest.raises(ValueError, match=r"argument 'x': spans 2147487747 elements; .* no wide"):
        bind(m, (FakeCuda((HUGE,), "<f4"),))


def test_a_64_bit_size_in_an_i32_parameter_is_refused() -> None:
    m = scale_manifest(size_dtype="i32")
    with pytest.raises(ValueError, match="size 'N' = 2147487747 does not fit the kernel's i32"):
        bind(m, (FakeCuda((HUGE,), "<f4"),))


def test_each_variant_has_its_plan_and_its_loaded_function(monkeypatch: pytest.MonkeyPatch) -> None:
    from tilec.runtime import driver

    seen = Launches(monkeypatch)
    loads: list[str] = []
    used: list[Any] = []

    def load_function(ptx: str, entry: str, smem: int) -> tuple[str, str]:
        loads.append(ptx)
        return f"module of {ptx}", f"function of {ptx}"

    def launch(fn: Any, *rest: Any) -> None:
        used.append(fn)
        seen.launch(fn, *rest)

    monkeypatch.setattr(driver, "load_function", load_function)
    monkeypatch.setattr(driver, "launch", launch)
    k = Kernel(scale_manifest(), "// narrow", "// wide")
    for n in (1000, HUGE, 1000, HUGE):
        k(FakeCuda((n,), "<f4"))
    assert k.plans == 2
    assert loads == ["// narrow", "// wide"]  # each loaded once, on its first launch
    assert used == ["function of // narrow", "function of // wide"] * 2
    assert [call[4][1] for call in seen.calls] == [1000, HUGE, 1000, HUGE]


def test_kernel_refuses_a_manifest_and_ptx_that_disagree() -> None:
    with pytest.raises(ValueError, match="names wide PTX 'scale.wide.ptx'; no wide PTX"):
        Kernel(scale_manifest(), "// narrow")
    with pytest.raises(ValueError, match="names wide PTX ''; got wide PTX"):
        Kernel(scale_manifest(wide=False), "// narrow", "// wide")


def test_bundle_keeps_the_wide_ptx_and_old_manifests_still_load(tmp_path: Path) -> None:
    m = scale_manifest()
    root = write_bundle(tmp_path / "scale", m, "// narrow\n", "// wide\n")
    data = json.loads((root / "manifest.json").read_text())
    assert data["format_version"] == 1 and data["wide_ptx"] == "scale.wide.ptx"
    assert (root / "scale.wide.ptx").read_text() == "// wide\n"
    assert read_bundle(root) == (m, "// narrow\n")
    assert read_wide_ptx(root, m) == "// wide\n"
    assert load(root).wide_ptx == "// wide\n"
    # A manifest written before the field existed has no wide variant.
    del data["wide_ptx"]
    (root / "manifest.json").write_text(json.dumps(data))
    old = load(root)
    assert old.manifest.wide_ptx_file == "" and old.wide_ptx == ""
    with pytest.raises(ManifestError, match="no wide PTX, but wide_ptx is 'scale.wide.ptx'"):
        write_bundle(tmp_path / "other", m, "// narrow\n")
    (root / "scale.wide.ptx").unlink()
    (root / "manifest.json").write_text(json.dumps(m.to_json()))
    with pytest.raises(FileNotFoundError, match="names PTX file 'scale.wide.ptx', not there"):
        load(root)


@pytest.mark.parametrize("name", ["../x.ptx", ".hidden", "scale.ptx"])
def test_wide_ptx_must_be_another_file_in_the_bundle(name: str) -> None:
    with pytest.raises(ManifestError, match="wide_ptx: "):
        replace(scale_manifest(), wide_ptx_file=name)
