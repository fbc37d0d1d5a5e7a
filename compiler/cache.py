"""Compile cache: bundles on disk keyed by source, parameters, target and tilec version, and
stored under that key combined with a digest of the compiler's own code: a compiler change
(same version) compiles again instead of returning bundles an older compiler made."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tilec import __version__
from tilec.runtime.bundle import MANIFEST_NAME, Manifest, read_bundle, write_bundle

# (manifest, PTX, wide PTX, special PTX: each variant "" when the manifest names none)
CompileFn = Callable[[str, dict[str, Any], str], tuple[Manifest, str, str, str]]


def cache_dir() -> Path:
    """$TILEC_CACHE_DIR, else ~/.cache/tilec."""
    env = os.environ.get("TILEC_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "tilec"


def cache_key(source: str, params: Mapping[str, Any], target: str) -> str:
    """sha256 (hex) of the source text, the sorted parameters, the target and tilec's version."""
    blob = json.dumps(
        {
            "source": source,
            "params": sorted((str(k), repr(v)) for k, v in params.items()),
            "target": target,
            "tilec": __version__,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


# Every package whose code shapes what a compile produces (the PTX, the manifest): the
# frontend and the runtime's bundle writer live under `tilec` itself; a package added to
# pyproject.toml's package-dir must be added here (test_runtime_cache checks that it is).
DIGEST_PACKAGES = ("tilec", "tilec.dialects", "tilec.lowering", "tilec.passes", "tilec.tools")


def digest_roots() -> list[tuple[str, Path]]:
    """(package, folder) of each of DIGEST_PACKAGES, found, not imported (importing
    tilec.passes would load MLIR). A package that cannot be found is an error: a digest
    that silently skipped it would serve bundles an older compiler made."""
    roots = []
    for name in DIGEST_PACKAGES:
        spec = importlib.util.find_spec(name)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            raise RuntimeError(f"compiler_digest: package {name!r} not found")
        roots.extend((name, Path(loc)) for loc in locations)
    return roots


@functools.cache
def compiler_digest() -> str:
    """sha256 (hex) of the compiler's code: every .py and .mlir file of DIGEST_PACKAGES, by
    package and path, read once per process."""
    h = hashlib.sha256()
    for name, root in digest_roots():
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".mlir") and "__pycache__" not in path.parts:
                where = f"{name}:{path.relative_to(root).as_posix()}"
                h.update(where.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def cached_compile(
    source: str, params: Mapping[str, Any], target: str, compile_fn: CompileFn
) -> Path:
    """The bundle directory for (source, params, target), compiling it on a miss.

    `compile_fn(source, params, target)` returns (manifest, ptx, wide ptx, special ptx). Safe
    across processes: each writes its bundle into a private temp directory and renames it into
    place; a rename that loses the race leaves the winner's (identical) bundle and discards its
    own.
    """
    key = cache_key(source, params, target)
    final = _slot(key)
    if (final / MANIFEST_NAME).is_file():
        return final
    manifest, ptx, wide_ptx, special_ptx = compile_fn(source, dict(params), target)
    manifest = dataclasses.replace(
        manifest,
        source_hash=manifest.source_hash or f"sha256:{key}",
        source_params=manifest.source_params or {str(k): v for k, v in params.items()},
    )
    staging = _staging(key, final)
    try:
        write_bundle(staging / "bundle", manifest, ptx, wide_ptx, special_ptx)
        _install(staging / "bundle", final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def _slot(key: str) -> Path:
    """Where the bundle of `key` lives: the key combined with the compiler's digest."""
    slot = hashlib.sha256(f"{key}:{compiler_digest()}".encode()).hexdigest()
    return cache_dir() / slot[:2] / slot


def _staging(key: str, final: Path) -> Path:
    """A private temporary folder beside `final` to build into."""
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{key[:16]}.", dir=final.parent))


def _install(bundle: Path, final: Path) -> None:
    """Rename `bundle` to `final`; where another process renamed its bundle first
    (ENOTEMPTY/EEXIST), keep that one."""
    try:
        os.rename(bundle, final)
    except OSError:
        if not (final / MANIFEST_NAME).is_file():
            raise


def cached_build(
    path: str, kernel: str, params: Mapping[str, str], target: str, variants: bool = True
) -> Path:
    """The bundle of `kernel` in the .tile file at `path` built for `target` with `params`
    (`tilec.build.build`: its variant(...) builds included unless `variants` is False), from
    the cache or built into it. Keyed as `cached_compile` is (source, parameters with the
    kernel's name, target, tilec version and the compiler's digest); concurrent processes race
    as there."""
    source = Path(path).read_text(errors="replace")
    how = "variants" if variants else "plain"
    key = cache_key(source, {**params, "__kernel__": kernel, "__build__": how}, target)
    final = _slot(key)
    if (final / MANIFEST_NAME).is_file():
        return final
    from tilec.build import build

    staging = _staging(key, final)
    try:
        written = build(path, staging, dict(params), target, variants=variants)
        found = [b for b in written if read_bundle(b)[0].entry == kernel]
        if not found:
            names = ", ".join(read_bundle(b)[0].entry for b in written)
            raise ValueError(f"{path} has no kernel named {kernel!r}; its kernels: {names}")
        _install(found[0], final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def clear() -> None:
    """Removes every cached bundle."""
    shutil.rmtree(cache_dir(), ignore_errors=True)
