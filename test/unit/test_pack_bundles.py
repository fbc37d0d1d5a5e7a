"""test/gpu/pack_bundles.py: an archive replaces exactly the folders packed into it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "gpu" / "pack_bundles.py"


def module() -> object:
    spec = importlib.util.spec_from_file_location("pack_bundles", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_unpacking_one_family_keeps_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pb = module()
    monkeypatch.chdir(tmp_path)
    for name in ("gemm", "gemv"):
        (tmp_path / "build/families" / name).mkdir(parents=True)
        (tmp_path / "build/families" / name / "family.json").write_text(name)
    pb.pack(["build/families/gemm"])
    (tmp_path / "build/families/gemm/family.json").write_text("stale")
    (tmp_path / "build/families/gemm/old.ptx").write_text("gone after unpacking")
    pb.unpack()
    assert (tmp_path / "build/families/gemm/family.json").read_text() == "gemm"
    assert not (tmp_path / "build/families/gemm/old.ptx").exists()  # the folder was replaced
    assert (tmp_path / "build/families/gemv/family.json").read_text() == "gemv"  # kept
    # a whole top folder replaces that folder
    (tmp_path / "build/sm90/x").mkdir(parents=True)
    pb.pack(["build/sm90"])
    (tmp_path / "build/sm90/extra").mkdir()
    pb.unpack()
    assert (tmp_path / "build/sm90/x").is_dir() and not (tmp_path / "build/sm90/extra").exists()
