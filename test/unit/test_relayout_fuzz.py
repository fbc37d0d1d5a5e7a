"""relayout(x, through = s[, like = y]) fuzzed through the lowering: kernels built from random
sources (a loaded tile, an MMA accumulator, math on them), buffers (row- or column-major,
swizzled, padded, the wrong shape or element type) and `like`s compile or fail with a located
error, never a traceback; and a relayout the compiler keeps holds its two barriers."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tilec.cli import main

SHAPES = [(64, 64), (32, 64), (16, 128), (64, 32), (8, 256)]
ELEMS = ["f32", "f16", "bf16"]


def buffer(rng: random.Random, shape: tuple[int, int], elem: str) -> str:
    r, c = shape if rng.random() < 0.85 else rng.choice(SHAPES)
    kind = rng.randrange(4)
    layout = [
        f"({r}, {c}):({c}, 1)",
        f"({r}, {c}):(1, {r})",
        f"({r}, {c}):({c + 4}, 1)",
        f"swizzle<3,2,3> o ({r}, {c}):({c}, 1)",
    ][kind]
    if elem == "f32" and kind == 3:
        layout = f"swizzle<2,2,3> o ({r}, {c}):({c}, 1)"
    return f"shared<{elem if rng.random() < 0.9 else rng.choice(ELEMS)}>({layout})"


def kernel(rng: random.Random) -> str:
    mma = rng.random() < 0.4
    shape = (64, 64) if mma else rng.choice(SHAPES)
    elem = "f32" if mma else rng.choice(ELEMS)
    r, c = shape
    lines = [f"  let s = {buffer(rng, shape, elem)}"]
    if mma:
        lines += [
            "  let mma = tiled_mma<sm80.mma_16x8x16.f32.f16.f16.f32>(atoms = (2, 2, 1))",
            "  let x = fragment<f32>(partition_c(mma, (64, 64))) = 1.5",
        ]
    else:
        lines.append(f"  let x = load(local_tile(X, ({r}, {c}), (block.x, 0))) : {elem}")
    value = rng.choice(["x", "2.0 * x", "relu(x)"]) if elem == "f32" else "x"
    like = rng.choice(["", "", ", like = x", f", like = load(local_tile(Y, ({r}, {c}), (0, 0)))"])
    loop = rng.random() < 0.3
    body = f"let y = relayout({value}, through = s{like})"
    store = f"store(y, local_tile(Y, ({r}, {c}), (block.x, 0)))"
    if loop:
        lines.append(f"  for i in range(3) {{\n    {body}\n    {store}\n  }}")
    else:
        lines += [f"  {body}", f"  {store}"]
    return (
        f"kernel k(X: f32[M, N], Y: f32[M, N]) grid(4) threads({rng.choice([64, 128, 256])}) "
        "target(sm_80)\n{\n" + "\n".join(lines) + "\n}\n"
    )


@pytest.mark.parametrize("seed", range(30))
def test_relayout_compiles_or_fails_located(tmp_path: Path, seed: int, capsys) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    path = tmp_path / "relayout.tile"
    path.write_text(kernel(rng))
    out = tmp_path / "k.lowered.mlir"
    status = main(["compile", str(path), "--emit", "lowered", "-o", str(out)])
    err = capsys.readouterr().err
    assert status in (0, 1), err
    if status == 1:
        assert re.search(r"relayout\.tile:\d+:\d+: error: ", err), err
        assert "Traceback" not in err and "internal error" not in err, err
        return
    text = out.read_text()
    assert "tile.relayout" not in text
    # Two barriers a relayout unless it folded: the kernel holds 0 or 2.
    assert text.count("gpu.barrier") in (0, 2), path.read_text()


@pytest.mark.parametrize("seed", range(20))
def test_mutated_relayout_ir_never_crashes(tmp_path: Path, seed: int, capsys) -> None:  # noqa: ANN001
    """tile-relayout's lit inputs, mutated (test_opt_fuzz.mutate), through tile-distribute and
    the rungs around tile-relayout: success or a located error, never a Python exception."""
    from test_opt_fuzz import mutate

    from tilec.opt import main as tile_opt

    passes = Path(__file__).resolve().parents[1] / "passes"
    text = (passes / "tile-relayout.mlir").read_text()
    text += "\n// -----\n" + (passes / "tile-relayout.mlir.bad").read_text()
    path = tmp_path / "input.mlir"
    path.write_text(mutate(text, random.Random(seed)))
    pipeline = "tile-distribute,tile-relayout,convert-tile-views,convert-tile-sync,"
    pipeline += "convert-tile-memory"
    flags = ["--split-input-file", "--allow-unregistered-dialect", "-p", pipeline]
    status = tile_opt([str(path), *flags])
    err = capsys.readouterr().err
    assert status in (0, 1), err
    assert "internal error" not in err and "Traceback" not in err
