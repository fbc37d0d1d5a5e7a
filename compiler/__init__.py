"""tilec: an open, MLIR-based compiler for a textual tile DSL.

`tilec.compile(path, **params)` compiles (or finds in the cache) and returns a launchable
kernel; `tilec.runtime.load(bundle)` loads a precompiled one on a machine without MLIR.
Nothing here imports MLIR until `compile` is called, so the runtime stays light.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def compile(path: str, arch: str | None = None, kernel: str | None = None, **params: Any) -> Any:  # noqa: A001
    """The launchable kernel of `path` (a `tilec.runtime.Kernel`), through the compile cache.

    `params` override compile-time parameters (`BM=64`); `arch` overrides the kernel's target;
    `kernel` picks one kernel when the file has several.
    """
    from pathlib import Path

    from tilec.build import compile_tile
    from tilec.cache import cached_compile
    from tilec.runtime import load

    text = Path(path).read_text(errors="replace")
    overrides = {k: str(v) for k, v in params.items()}

    def compile_fn(source: str, p: dict[str, Any], target: str) -> tuple[Any, str, str, str]:
        compiled = compile_tile(path, overrides, arch)
        manifests = [m for m in compiled.manifests if kernel in (None, m.entry)]
        names = ", ".join(m.entry for m in compiled.manifests)
        if not manifests:
            raise ValueError(f"{path} has no kernel named {kernel!r}; its kernels: {names}")
        if len(manifests) != 1:
            raise ValueError(f"{path} has kernels {names}: pick one with kernel=NAME")
        special = compiled.special_ptx if manifests[0].special_ptx_file else ""
        return manifests[0], compiled.ptx, compiled.wide_ptx, special

    key_params = {**overrides, "__kernel__": kernel or ""}
    return load(cached_compile(text, key_params, arch or "default", compile_fn))
