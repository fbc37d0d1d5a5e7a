"""Compile-time baseline: every example and GEMM bundle configuration to PTX, timed.

python bench/compile_time.py [OUT_DIR]        # default build/ptx-base

Writes OUT_DIR/<config>.ptx and OUT_DIR/<config>.json (the manifests: dynamic shared memory,
launch shape) for every configuration, or OUT_DIR/<config>.err when the compile fails, and
prints each one's wall time. `diff -r build/ptx-base build/ptx-new` after a change that should
keep behaviour shows it did: the configurations are those `test/gpu/build_gemm_bundles.sh` and
`test/gpu/build_bundles.py` build for the GPU tier, the SM90 GEMMs' schedules and few-row
builds (sm_90a), plus every `examples/*.tile` at its defaults for both targets. One process
compiles them all (the imports are paid once).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tilec.build import compile_tile
from tilec.diagnostics import DiagnosticError
from tilec.driver import CompileOptions, compile_file

ROOT = Path(__file__).resolve().parents[1]
ARCHES = ("sm_80", "sm_90a")
Params = dict[str, str]


def _d(*pairs: str) -> Params:
    return dict(p.split("=", 1) for p in pairs)


# test/gpu/build_gemm_bundles.sh: name -> (arch, -D parameters) for examples/gemm_sm80.tile.
GEMM: dict[str, tuple[str, Params]] = {
    "default_sm80": ("sm_80", {}),
    "default_sm90a": ("sm_90a", {}),
    **{
        f"a{ma}b{mb}_{t}": ("sm_90a", _d(f"T={t}", f"MA={ma}", f"MB={mb}"))
        for t in ("f16", "bf16")
        for ma in (0, 1)
        for mb in (0, 1)
    },
    "a1b1_bf16_noprefetch": ("sm_80", _d("T=bf16", "MA=1", "MB=1", "PREFETCH=0")),
    "bk32": ("sm_90a", _d("BK=32", "STAGES=4")),
    "prefetch_128x128x32": ("sm_90a", _d("BN=128", "WN=2", "BK=32", "STAGES=4")),
    "prefetch_bk16": ("sm_90a", _d("PREFETCH=1", "BK=16", "STAGES=6", "BN=128", "WN=2")),
    "noprefetch_bk64": ("sm_90a", _d("PREFETCH=0", "BK=64", "STAGES=3")),
    "tile128_s1": ("sm_90a", _d("BN=128", "WN=2", "BK=32", "STAGES=1")),
    "tile64x128": ("sm_80", _d("BM=64", "BN=128", "WN=2", "WM=2", "BK=32", "STAGES=4")),
    "small_m16n64": ("sm_90a", _d("BM=16", "BN=64", "WM=1", "WN=2", "BK=64", "STAGES=6")),
    "small_m64n64": ("sm_90a", _d("BM=64", "BN=64", "WM=2", "WN=2", "BK=64", "STAGES=6")),
}
# The split-K kernels, for both targets.
SPLITK: dict[str, Params] = {
    **{f"s{s}": _d(f"SPLITS={s}") for s in (2, 4, 8)},
    **{
        f"m128n128_s{s}": _d(f"SPLITS={s}", "BM=128", "BN=128", "WM=2", "WN=2", "STAGES=4")
        for s in (2, 4)
    },
    **{
        f"m128n256_s{s}": _d(f"SPLITS={s}", "BM=128", "BN=256", "WM=2", "WN=4", "STAGES=3")
        for s in (2, 4)
    },
}
# examples/gemm_sm90*.tile (sm_90a only): file -> name -> -D parameters, the schedules and the
# few-row builds that test/gpu/build_sm90_bundles.sh's bundles launch (their variants included).
SM90: dict[str, dict[str, Params]] = {
    "gemm_sm90.tile": {
        "pp_s5": _d("PP=1", "BN=128", "STAGES=5"),
        "pp_s4": _d("PP=1", "BN=128"),
        "cm2": _d("CM=2"),
        "nosk_f16": _d("SK=0", "T=f16"),
        "a1b0": _d("MA=1"),
        "o32": _d("O=f32"),
        **{f"sw{n}": _d("SW=1", f"BN={n}", "STAGES=8") for n in (8, 16, 32)},
        **{
            f"sw{n}_pp": _d("SW=1", "PP=1", "BM=64", f"BN={n}", f"STAGES={s}")
            for n, s in ((64, 8), (128, 8), (192, 6))
        },
    },
    "gemm_sm90_bias_act.tile": {
        "gelu": _d("ACT=2", "BETA=0"),
        "gelu_pp": _d("ACT=2", "PP=1", "BN=128"),
        "relu_sw16": _d("ACT=1", "SW=1", "BN=16", "STAGES=8"),
    },
    "gemm_sm90_batched.tile": {"pp": _d("PP=1", "BN=128")},
}
# test/gpu/build_bundles.py's epilogue variants (its table, not a copy), for both targets.
sys.path.insert(0, str(ROOT / "test" / "gpu"))
from build_bundles import EPILOGUE  # noqa: E402


def configurations() -> list[tuple[str, Path, Params, str]]:
    """(name, source, -D parameters, arch) of every configuration, in a fixed order."""
    found: list[tuple[str, Path, Params, str]] = []
    for example in sorted((ROOT / "examples").glob("*.tile")):
        found += [(f"example_{example.stem}_{a}", example, {}, a) for a in ARCHES]
    gemm = ROOT / "examples" / "gemm_sm80.tile"
    found += [(f"gemm_{n}", gemm, p, a) for n, (a, p) in GEMM.items()]
    splitk = ROOT / "examples" / "gemm_sm80_splitk.tile"
    found += [(f"splitk_{n}_{a}", splitk, p, a) for n, p in SPLITK.items() for a in ARCHES]
    for name, (example, params) in EPILOGUE.items():
        found += [(f"epilogue_{name}_{a}", ROOT / "examples" / example, params, a) for a in ARCHES]
    for example, configs in SM90.items():
        source = ROOT / "examples" / example
        found += [(f"{source.stem}_{n}", source, p, "sm_90a") for n, p in configs.items()]
    reduce = ROOT / "test" / "gpu" / "reduce_store.tile"
    found += [(f"reduce_{a}", reduce, {}, a) for a in ARCHES]
    vadd = ROOT / "test" / "backend" / "vadd.gpu.mlir"
    found += [(f"vadd_gpu_mlir_{a}", vadd, {}, a) for a in ARCHES]
    return found


def compile_one(source: Path, params: Params, arch: str) -> tuple[str, str]:
    """(PTX, manifests as JSON) of one configuration; .mlir inputs have no manifest."""
    if source.suffix != ".tile":
        ptx = compile_file(str(source), CompileOptions(emit="ptx", arch=arch))
        return str(ptx.value), "[]"
    compiled = compile_tile(str(source), params, arch)
    manifests = [m.to_json() for m in compiled.manifests]
    return compiled.ptx, json.dumps(manifests, indent=1, sort_keys=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    total = time.perf_counter()
    for name, source, params, arch in configurations():
        for stale in out.glob(f"{name}.*"):
            stale.unlink()
        start = time.perf_counter()
        try:
            ptx, manifests = compile_one(source, params, arch)
        except DiagnosticError as exc:
            (out / f"{name}.err").write_text(str(exc) + "\n")
            print(f"{time.perf_counter() - start:7.2f} s  {name} (error)", flush=True)
            continue
        (out / f"{name}.ptx").write_text(ptx)
        (out / f"{name}.json").write_text(manifests + "\n")
        print(f"{time.perf_counter() - start:7.2f} s  {name}", flush=True)
    print(f"{time.perf_counter() - total:7.2f} s  total, {len(configurations())} configurations")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "ptx-base")
