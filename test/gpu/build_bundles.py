"""GPU tier: builds the bundles the GPU tests load (needs MLIR; run where tilec compiles).

python test/gpu/build_bundles.py [OUT_DIR]    # default build/bundles

OUT_DIR/vadd_<arch> for test_vadd_bundle.py, OUT_DIR/epilogue/<variant>/<kernel>_<arch> (the
GEMM epilogue example for each activation and without C, and the batched GEMM) for
test_gemm_epilogue.py, and OUT_DIR/reduce/<kernel>_<arch> (test/gpu/reduce_store.tile) for
test_reduce_store.py, OUT_DIR/negative_stride/<kernel>_<arch> (test/gpu/negative_stride.tile)
for test_negative_stride.py, OUT_DIR/relayout/<kernel>_<arch> (test/gpu/relayout.tile) and
OUT_DIR/relayout_sweep/<variant>/ (test/gpu/relayout_sweep.tile) for test_relayout.py;
OUT_DIR/planted/transpose_<arch>, transpose.tile without its barrier, for the sanitizer tier
(test/gpu/sanitize.py) to catch.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mlir import ir

from tilec import __version__, backend
from tilec.build import compile_tile
from tilec.cache import cache_key
from tilec.context import make_context
from tilec.runtime import Manifest, SizeParam, TensorParam, write_bundle

ROOT = Path(__file__).resolve().parents[2]
VADD = ROOT / "test" / "backend" / "vadd.gpu.mlir"
REDUCE = ROOT / "test" / "gpu" / "reduce_store.tile"
NEGATIVE = ROOT / "test" / "gpu" / "negative_stride.tile"
RELAYOUT = ROOT / "test" / "gpu" / "relayout.tile"
SWEEP = ROOT / "test" / "gpu" / "relayout_sweep.tile"
BLOCK = 256  # matches the kernel's gpu.known_block_size
ARCHES = ("sm_80", "sm_90a")
# variant -> (example, -D parameters)
EPILOGUE = {
    "act0": ("gemm_sm80_bias_relu.tile", {"ACT": "0"}),
    "act1": ("gemm_sm80_bias_relu.tile", {"ACT": "1"}),
    "act2": ("gemm_sm80_bias_relu.tile", {"ACT": "2"}),
    "act1_beta0": ("gemm_sm80_bias_relu.tile", {"ACT": "1", "BETA": "0"}),
    "batched": ("gemm_sm80_batched.tile", {}),
    "batched_narrow": ("gemm_sm80_batched.tile", {"NARROW": "1"}),
}


def vadd_manifest(target: str, source: str) -> Manifest:
    return Manifest(
        entry="vadd",
        target=target,
        params=(
            TensorParam("A", "f32", ("N",), align=4, intent="in"),
            TensorParam("B", "f32", ("N",), align=4, intent="in"),
            TensorParam("C", "f32", ("N",), align=4, intent="out"),
            SizeParam("N", ("A", 0), "i64"),
        ),
        grid=("cdiv(N, BLOCK)", 1, 1),
        block=("BLOCK", 1, 1),
        constants={"BLOCK": BLOCK},
        source_hash="sha256:" + cache_key(source, {}, target),
        tilec_version=__version__,
    )


def build_tile(
    source: Path, params: dict[str, str], out: Path, arches: tuple[str, ...] = ARCHES
) -> list[Path]:
    """Every kernel of a .tile file, for each target, spill-free: out/<kernel>_<arch>."""
    written = []
    for arch in arches:
        compiled = compile_tile(str(source), params, arch)
        usage = backend.ptxas_report(compiled.ptx, arch)
        assert usage.spill_stores == usage.spill_loads == 0, (source, params, arch, usage)
        for manifest in compiled.manifests:
            name = f"{manifest.entry}_{arch.replace('_', '')}"
            written.append(write_bundle(out / name, manifest, compiled.ptx, compiled.wide_ptx))
    return written


def build_epilogue(out: Path) -> list[Path]:
    """The GEMM epilogue variants and the batched GEMM."""
    written = []
    for variant, (example, params) in EPILOGUE.items():
        written += build_tile(ROOT / "examples" / example, params, out / "epilogue" / variant)
    return written


def build_sweep(out: Path) -> list[Path]:
    """test/gpu/relayout_sweep.tile over its buffers, spreads and element types (sm_90a):
    out/relayout_sweep/b<B>_like<LIKE>_<T>/relayout_sweep_sm90a."""
    written = []
    for b in range(4):
        for like in (0, 1):
            for t in ("f32", "f16", "bf16"):
                params = {"B": str(b), "LIKE": str(like), "T": t}
                folder = out / "relayout_sweep" / f"b{b}_like{like}_{t}"
                written += build_tile(SWEEP, params, folder, ("sm_90a",))
    return written


def build_planted(out: Path) -> list[Path]:
    """examples/transpose.tile with its barrier taken out of the PTX: a known race for the
    sanitizer tier (test/gpu/sanitize.py --planted out/planted/transpose_sm90a) to prove it
    catches one. The race is planted after compiling: tile-hazards refuses the source without
    its barrier() (a located error), as it should."""
    written = build_tile(ROOT / "examples" / "transpose.tile", {}, out / "planted")
    for bundle in written:
        for ptx in bundle.glob("*.ptx"):
            text = ptx.read_text()
            assert text.count("\tbar.sync \t0;\n") == 1, ptx
            ptx.write_text(text.replace("\tbar.sync \t0;\n", ""))
    return written


def build(out: Path) -> list[Path]:
    source = VADD.read_text()
    written = []
    for arch, name in (("sm_90a", "vadd_sm90a"), ("sm_80", "vadd_sm80")):
        with make_context(), ir.Location.unknown():
            ptx = backend.compile_to_ptx(ir.Module.parse(source), arch)
        usage = backend.ptxas_report(ptx, arch)  # refuse to ship PTX ptxas rejects or that spills
        assert usage.spill_stores == usage.spill_loads == 0, usage
        written.append(write_bundle(out / name, vadd_manifest(arch, source), ptx))
    return (
        written
        + build_epilogue(out)
        + build_tile(REDUCE, {}, out / "reduce")
        + build_tile(NEGATIVE, {}, out / "negative_stride")
        + build_tile(RELAYOUT, {}, out / "relayout")
        + build_sweep(out)
        + build_planted(out)
    )


if __name__ == "__main__":
    for path in build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "bundles"):
        print(path)
