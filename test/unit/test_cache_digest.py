"""The compile cache's compiler digest covers every package that shapes a compile: an edit of
one byte in any of them changes it (else the cache serves bundles an older compiler made)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tilec import cache

REPO = Path(__file__).resolve().parents[2]

# One file of each folder whose code decides the PTX or the manifest.
EDITED = [
    "compiler/driver.py",
    "compiler/frontend/irgen.py",
    "compiler/runtime/bundle.py",
    "dialects/layout/algebra.py",
    "dialects/tile/tile.irdl.mlir",
    "lowering/tile_access.py",
    "lowering/sm90_wgmma.py",
    "passes/convert_layout_to_arith.py",
    "tools/tilec.py",
]


def fresh_digest() -> str:
    return cache.compiler_digest.__wrapped__()  # past functools.cache: read the files again


def test_every_installed_package_folder_is_digested() -> None:
    """pyproject's package-dir names the folders that install as tilec's packages; each is
    (inside) a folder the digest reads."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    folders = {REPO / d for d in config["tool"]["setuptools"]["package-dir"].values()}
    roots = [root.resolve() for _, root in cache.digest_roots()]
    missing = [f for f in folders if not any(f.resolve().is_relative_to(r) for r in roots)]
    assert missing == []


@pytest.mark.parametrize("relative", EDITED)
def test_an_edit_changes_the_digest(relative: str, monkeypatch: pytest.MonkeyPatch) -> None:
    target = (REPO / relative).resolve()
    assert target.is_file()
    before = fresh_digest()
    real = Path.read_bytes

    def edited(self: Path) -> bytes:
        data = real(self)
        return data + b"\n# edited\n" if self.resolve() == target else data

    monkeypatch.setattr(Path, "read_bytes", edited)
    assert fresh_digest() != before


def test_the_digest_is_stable_and_names_packages() -> None:
    assert fresh_digest() == fresh_digest() == cache.compiler_digest()
    names = [name for name, _ in cache.digest_roots()]
    assert names == list(cache.DIGEST_PACKAGES)
    assert {"tilec", "tilec.lowering", "tilec.passes", "tilec.dialects"} <= set(names)


def test_a_missing_package_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "DIGEST_PACKAGES", ("tilec", "tilec.no_such_package"))
    with pytest.raises(RuntimeError, match="package 'tilec.no_such_package' not found"):
        cache.digest_roots()
