"""`variant(COND, P = V)`: the build writes the kernel built with P = V as a bundle in the
kernel's bundle, the manifest names it and its condition, and each launch signature runs the
build its sizes choose."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from test_runtime import FakeCuda, Launches
from test_specialize import BODY, HEAD

from tilec.build import build
from tilec.runtime import load
from tilec.runtime.binding import bind


def source(tmp_path: Path) -> Path:
    path = tmp_path / "k.tile"
    path.write_text(f"{HEAD}\n  variant(N % 256 != 0, COLS = 128)\n{BODY}")
    return path


def test_build_writes_the_variant_bundle(tmp_path: Path) -> None:
    (bundle,) = build(str(source(tmp_path)), tmp_path / "out", {}, "sm_80")
    data = json.loads((bundle / "manifest.json").read_text())
    assert data["variants"] == [{"when": ["((N % 256)) != (0)"], "bundle": "variant"}]
    other = json.loads((bundle / "variant" / "manifest.json").read_text())
    assert other["constants"]["COLS"] == 128 and data["constants"]["COLS"] == 256
    assert other["source"]["params"] == {"COLS": "128"} and "variants" not in other
    kernel = load(bundle)
    (mine,) = kernel.others
    assert mine.ptx != kernel.ptx
    for n, chosen in ((256, False), (1024, False), (1000, True), (128, True)):
        b = bind(kernel.manifest, (FakeCuda((4, n)), FakeCuda((4, n), ptr=0x7F1000000000)))
        assert (kernel.variant_for(b) is mine) is chosen, n


def test_a_build_with_the_variants_parameters_has_none(tmp_path: Path) -> None:
    (bundle,) = build(str(source(tmp_path)), tmp_path / "out", {"COLS": "128"}, "sm_80")
    assert "variants" not in json.loads((bundle / "manifest.json").read_text())
    assert not (bundle / "variant").exists() and load(bundle).others == ()


def test_each_signature_launches_its_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tilec.runtime import driver

    (bundle,) = build(str(source(tmp_path)), tmp_path / "out", {}, "sm_80")
    kernel = load(bundle)
    seen = Launches(monkeypatch)
    loaded: list[str] = []
    monkeypatch.setattr(
        driver, "load_function", lambda ptx, entry, smem: loaded.append(ptx) or ("m", ptx)
    )
    ran: list[str] = []
    monkeypatch.setattr(
        driver, "launch", lambda fn, *rest: (ran.append(fn), seen.launch(fn, *rest))
    )
    # The variant takes the kernel's signature of the call: it does not sign it again.
    monkeypatch.setattr(kernel.others[0], "_signature", lambda args: 1 / 0)
    for n in (1000, 512, 1000, 300, 512):
        kernel(FakeCuda((4, n)), FakeCuda((4, n), ptr=0x7F1000000000))
    base, other = kernel.ptx, kernel.others[0].ptx
    assert ran == [other, base, other, other, base]
    assert loaded == [other, base]  # each build's module loaded once
    # Grids from each build's own manifest: R blocks either way, 64 threads.
    assert [c[0] for c in seen.calls] == [(4, 1, 1)] * 5


def test_several_variants_each_with_its_folder_and_conditions(tmp_path: Path) -> None:
    """Two clauses, the second with two conditions: two folders, tried in the clauses' order."""
    path = tmp_path / "k.tile"
    path.write_text(
        f"{HEAD}\n  variant(N % 256 != 0, COLS = 128)\n  variant(N >= 512, R < 64, COLS = 512)\n"
        f"{BODY}"
    )
    (bundle,) = build(str(path), tmp_path / "out", {}, "sm_80")
    data = json.loads((bundle / "manifest.json").read_text())
    assert data["variants"] == [
        {"when": ["((N % 256)) != (0)"], "bundle": "variant"},
        {"when": ["(N) >= (512)", "(R) < (64)"], "bundle": "variant2"},
    ]
    kernel = load(bundle)
    cols = [k.manifest.constants["COLS"] for k in kernel.others]
    assert cols == [128, 512]
    for (r, n), want in (((4, 1000), 128), ((4, 1024), 512), ((100, 1024), None), ((4, 256), None)):
        b = bind(kernel.manifest, (FakeCuda((r, n)), FakeCuda((r, n), ptr=0x7F1000000000)))
        chosen = kernel.variant_for(b)
        assert (chosen.manifest.constants["COLS"] if chosen else None) == want, (r, n)


def test_a_variant_aligned_otherwise_signs_the_call_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the variant's parameters ask other alignments, its signature of a call can differ
    from the kernel's: the variant then signs the call itself (and still runs it)."""
    from tilec.runtime import driver

    (bundle,) = build(str(source(tmp_path)), tmp_path / "out", {}, "sm_80")
    kernel = load(bundle)
    other = kernel.others[0]
    other._params = [replace(p, align=4) for p in other._params]
    assert not kernel._signs_like(other) and kernel._signs_like(kernel)
    Launches(monkeypatch)
    monkeypatch.setattr(driver, "load_function", lambda ptx, entry, smem: ("m", ptx))
    signed: list[int] = []
    sign = other._signature
    monkeypatch.setattr(other, "_signature", lambda args: signed.append(1) or sign(args))
    for _ in range(2):
        kernel(FakeCuda((4, 1000)), FakeCuda((4, 1000), ptr=0x7F1000000000))
    assert signed == [1, 1]
