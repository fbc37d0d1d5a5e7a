"""Compile cache tests: keys, hits, and two processes racing to fill the same entry."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tilec import cache
from tilec.runtime import Manifest, SizeParam, TensorParam, load

RACER = textwrap.dedent(
    """
    import os, sys, time
    from tilec import cache
    from tilec.runtime import Manifest, TensorParam

    def compile_fn(source, params, target):
        with open(os.environ["COUNT_FILE"], "a") as f:
            f.write(f"{os.getpid()}\\n")
        time.sleep(0.5)  # both processes are inside the compile at the same time
        m = Manifest("k", target, (TensorParam("X", "f32", ("N",)),), ("N", 1, 1), (1, 1, 1))
        return m, f"// built by {os.getpid()}\\n", "", ""

    print(cache.cached_compile("src", {"B": 1}, "sm_90a", compile_fn))
    """
)


def fake_compile(calls: list[Any]) -> cache.CompileFn:
    def compile_fn(
        source: str, params: dict[str, Any], target: str
    ) -> tuple[Manifest, str, str, str]:
        calls.append((source, params, target))
        m = Manifest(
            "k",
            target,
            (TensorParam("X", "f32", ("N",)), SizeParam("N")),
            ("cdiv(N, 128)", 1, 1),
            (128, 1, 1),
        )
        return m, f"// {source} {sorted(params.items())}\n", "", ""

    return compile_fn


def test_key_depends_on_everything() -> None:
    base = cache.cache_key("src", {"A": 1, "B": 2}, "sm_90a")
    assert base == cache.cache_key("src", {"B": 2, "A": 1}, "sm_90a")  # order-free
    others = {
        cache.cache_key("src2", {"A": 1, "B": 2}, "sm_90a"),
        cache.cache_key("src", {"A": 1, "B": 3}, "sm_90a"),
        cache.cache_key("src", {"A": 1, "B": "2"}, "sm_90a"),
        cache.cache_key("src", {"A": 1, "B": 2}, "sm_80"),
    }
    assert base not in others and len(others) == 4 and len(base) == 64


def test_miss_then_hit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    calls: list[Any] = []
    first = cache.cached_compile("src", {"BM": 64}, "sm_80", fake_compile(calls))
    second = cache.cached_compile("src", {"BM": 64}, "sm_80", fake_compile(calls))
    other = cache.cached_compile("src", {"BM": 128}, "sm_80", fake_compile(calls))
    assert first == second != other and len(calls) == 2
    assert first.parent.parent == tmp_path
    kernel = load(first)
    assert kernel.ptx == "// src [('BM', 64)]\n"
    assert kernel.manifest.source_hash == "sha256:" + cache.cache_key("src", {"BM": 64}, "sm_80")
    assert kernel.manifest.source_params == {"BM": 64}
    leftovers = [p for p in first.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_a_compiler_change_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bundles an older compiler made (same version, same source) are not returned."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    calls: list[Any] = []
    first = cache.cached_compile("src", {"BM": 64}, "sm_80", fake_compile(calls))
    monkeypatch.setattr(cache, "compiler_digest", lambda: "another compiler")
    second = cache.cached_compile("src", {"BM": 64}, "sm_80", fake_compile(calls))
    assert first != second and len(calls) == 2
    assert load(first).manifest.source_hash == load(second).manifest.source_hash


def test_compiler_digest_reads_the_passes() -> None:
    import tilec.passes

    digest = cache.compiler_digest()
    assert len(digest) == 64 and digest == cache.compiler_digest()
    assert (Path(tilec.passes.__file__).parent / "tile_distribute.py").is_file()


def test_default_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TILEC_CACHE_DIR", raising=False)
    assert cache.cache_dir() == Path.home() / ".cache" / "tilec"


def test_two_processes_race(tmp_path: Path) -> None:
    env = {"TILEC_CACHE_DIR": str(tmp_path / "c"), "COUNT_FILE": str(tmp_path / "count")}
    env = {**os.environ, **env}
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outs[0] == outs[1]
    assert len((tmp_path / "count").read_text().split()) == 2  # both really compiled
    kernel = load(outs[0])
    assert kernel.ptx.startswith("// built by ")
    entry = Path(outs[0])
    assert sorted(p.name for p in entry.iterdir()) == ["k.ptx", "manifest.json"]
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temp dirs left
