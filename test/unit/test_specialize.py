"""`specialize(N <= B)`: the clause's checks, the variant the build adds (its loops over whole
tiles folded away), the manifest that names it, and the binding that picks it per launch."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from test_runtime import FakeCuda

from tilec.build import build, compile_tile
from tilec.diagnostics import DiagnosticError, render
from tilec.driver import CompileOptions, compile_file
from tilec.frontend import check, parse_source
from tilec.runtime import Kernel, load
from tilec.runtime.binding import INDEX_LIMIT, bind
from tilec.runtime.bundle import (
    Manifest,
    ManifestError,
    Requirement,
    SizeParam,
    TensorParam,
    read_bundle,
    write_bundle,
)
from tilec.stages import BY_KEY, SPECIALIZE_PREFIX

REPO = Path(__file__).resolve().parents[2]
HEAD = "kernel k<COLS: int = 256>(X: f16[R, N], Y: f16[R, N]) grid(R) threads(64) target(sm_80)"
# The row loop of examples/softmax.tile, cut down: whole tiles in the loop, the last one after.
BODY = """{
  let last = cdiv(N, COLS) - 1
  for k in range(last) {
    store(load(local_tile(X, (1, COLS), (block.x, k))), local_tile(Y, (1, COLS), (block.x, k)))
  }
  store(load(local_tile(X, (1, COLS), (block.x, last))), local_tile(Y, (1, COLS), (block.x, last)))
}
"""


def errors(clause: str) -> list[list[str]]:
    """Each diagnostic as its header, source line and caret line."""
    src = f"{HEAD} {clause}\n{BODY}"
    with pytest.raises(DiagnosticError) as info:
        check(parse_source(src, "k.tile"), {})
    return [render(d, src).splitlines()[:3] for d in info.value.diagnostics]


@pytest.mark.parametrize(
    ("clause", "message", "caret"),
    [
        ("specialize(M <= COLS)", "a runtime size of the kernel's arguments (sizes: N, R)", "^"),
        ("specialize(N <= R)", "bound must be a static integer", "^"),
        ("specialize(N > 8)", "a runtime size, '<=' or '<', and a static bound", "^~~~~"),
        ("specialize(N < 1)", "N < 1 leaves no size of at least 1", "^~~~~"),
        ("specialize()", "takes conditions such as N <= COLS", "^~~~~~~~~~"),
        ("specialize(N <= 8, N <= 16)", "N is specialised twice", "^~~~~~~"),
        ("specialize(N <= 8) specialize(R <= 8)", "duplicate specialize(...) clause", "^~~~~~~~~~"),
    ],
)
def test_bad_clauses_are_located_errors(clause: str, message: str, caret: str) -> None:
    (header, line, marks), *_ = errors(clause)
    assert header.startswith("k.tile:1:") and "error:" in header and message in header
    assert line.startswith("kernel k") and marks.strip() == caret


def test_the_clause_becomes_an_attribute(tmp_path: Path) -> None:
    path = tmp_path / "k.tile"
    path.write_text(f"{HEAD} specialize(N < COLS + 1, R <= 7)\n{BODY}")
    tile = str(compile_file(str(path), CompileOptions(emit="tile")).value)
    assert "tile.specialize = {N = 256 : i64, R = 7 : i64}" in tile


def lowered_loops(path: Path, pipeline: str) -> int:
    options = CompileOptions(emit="lowered", pipelines={"lowered": pipeline})
    return str(compile_file(str(path), options).value).count("scf.for")


def test_the_variant_has_no_loop_over_whole_tiles(tmp_path: Path) -> None:
    path = tmp_path / "k.tile"
    path.write_text(f"{HEAD} specialize(N <= COLS)\n{BODY}")
    general = BY_KEY["lowered"].pipeline
    assert lowered_loops(path, general) == 1
    assert lowered_loops(path, SPECIALIZE_PREFIX + general) == 0
    # A bound past one tile decides nothing: the loop stays.
    path.write_text(f"{HEAD} specialize(N <= 2 * COLS)\n{BODY}")
    assert lowered_loops(path, SPECIALIZE_PREFIX + general) == 1


def test_build_writes_the_variant_and_names_it(tmp_path: Path) -> None:
    src = REPO / "examples/softmax.tile"
    (bundle,) = build(str(src), tmp_path, {"COLS": "1024"}, "sm_90a")
    manifest, ptx = read_bundle(bundle)
    assert manifest.special == (Requirement("N", "1024"),)
    special = (bundle / manifest.special_ptx_file).read_text()
    assert special != ptx and ".entry softmax(" in special
    # The general PTX holds the loops over whole tiles (their loads and stores twice over).
    assert special.count("ld.global.v4") < ptx.count("ld.global.v4")
    assert load(bundle).special_ptx == special
    # A kernel without the clause gets no variant.
    compiled = compile_tile(str(REPO / "examples/vadd.tile"), {}, "sm_90a")
    assert compiled.special_ptx == "" and not compiled.manifests[0].special_ptx_file


def rows_manifest() -> Manifest:
    return Manifest(
        entry="rows",
        target="sm_80",
        params=(
            TensorParam("x", "f32", ("R", "N")),
            SizeParam("R", ("x", 0)),
            SizeParam("N", ("x", 1)),
        ),
        grid=("R", 1, 1),
        block=(128, 1, 1),
        wide_ptx_file="rows.wide.ptx",
        special=(Requirement("N", "COLS"),),
        special_ptx_file="rows.special.ptx",
        constants={"COLS": 1024},
    )


@pytest.mark.parametrize(("n", "special"), [(1, True), (1000, True), (1024, True), (1025, False)])
def test_bind_picks_the_variant_from_the_sizes(n: int, special: bool) -> None:
    assert bind(rows_manifest(), (FakeCuda((3, n), "<f4"),)).special is special


def test_the_wide_variant_wins() -> None:
    b = bind(rows_manifest(), (FakeCuda((INDEX_LIMIT // 512 + 1, 512), "<f4"),))
    assert b.wide and not b.special


def test_manifest_round_trip_and_mismatches(tmp_path: Path) -> None:
    m = rows_manifest()
    root = write_bundle(tmp_path / "b", m, "// general", "// wide", "// special")
    data = json.loads((root / "manifest.json").read_text())
    assert data["special"] == [{"value": "N", "at_most": "COLS"}]
    assert data["special_ptx"] == "rows.special.ptx"
    assert read_bundle(root)[0] == m
    assert load(root).special_ptx == "// special"
    with pytest.raises(ManifestError, match="no special PTX, but special_ptx is named"):
        write_bundle(tmp_path / "c", m, "// general", "// wide")
    with pytest.raises(ManifestError, match="one names no variant the other does"):
        replace(m, special=())
    with pytest.raises(ManifestError, match="another variant's"):
        replace(m, special_ptx_file="rows.wide.ptx")
    with pytest.raises(ManifestError, match="unknown"):
        replace(m, special=(Requirement("K", "COLS"),))
    with pytest.raises(ValueError, match="names special PTX 'rows.special.ptx'; no special PTX"):
        Kernel(m, "// general", "// wide")


def test_each_launch_loads_and_runs_its_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_runtime import Launches

    from tilec.runtime import driver

    seen = Launches(monkeypatch)
    loads: list[str] = []
    used: list[str] = []
    monkeypatch.setattr(
        driver, "load_function", lambda ptx, entry, smem: loads.append(ptx) or ("m", ptx)
    )
    monkeypatch.setattr(
        driver, "launch", lambda fn, *rest: (used.append(fn), seen.launch(fn, *rest))
    )
    k = Kernel(rows_manifest(), "// general", "// wide", "// special")
    huge = (INDEX_LIMIT // 512 + 1, 512)
    for shape in ((3, 1000), (3, 1025), huge, (3, 1024), (3, 2000)):
        k(FakeCuda(shape, "<f4"))
    assert loads == ["// special", "// general", "// wide"]  # each once, at its first launch
    assert used == ["// special", "// general", "// wide", "// special", "// general"]
    assert k.plans == 5 and len(seen.calls) == 5


# Reductions in the loop over whole tiles need scratch of their own, which the variant, its loop
# folded away, does not: its dynamic shared memory (past 48 KiB with the 50 KiB buffer) differs
# from the general build's.
REDUCING = """{
  let big = shared<f16>((1, 25600))
  let last = cdiv(N, COLS) - 1
  copy(local_tile(X, (1, COLS), (block.x, last)), local_tile(big, (1, COLS), (0, 0)))
  barrier()
  var s = fragment<f32>((1, 1)) = 0
  for k in range(last) {
    s = s + reduce_sum(load(local_tile(X, (1, COLS), (block.x, k))) : f32, mode = 1)
  }
  let x = load(local_tile(X, (1, COLS), (block.x, last))) : f32
  let b = load(local_tile(big, (1, COLS), (0, 0)), like = x) : f32
  store(b + x / (s + reduce_sum(x, mode = 1)), local_tile(Y, (1, COLS), (block.x, last)))
}
"""
WIDE_HEAD = HEAD.replace("COLS: int = 256", "COLS: int = 1024")
WIDE_HEAD = WIDE_HEAD.replace("threads(64)", "threads(256)")


def test_the_variant_keeps_its_own_shared_memory(tmp_path: Path) -> None:
    path = tmp_path / "k.tile"
    path.write_text(f"{WIDE_HEAD} specialize(N <= COLS)\n{REDUCING}")
    (bundle,) = build(str(path), tmp_path / "out", {}, "sm_80")
    m, _ = read_bundle(bundle)
    general = compile_tile(str(path), {}, "sm_80").manifests[0].dynamic_smem
    assert m.dynamic_smem == general and m.special_dynamic_smem is not None
    assert m.special_dynamic_smem < m.dynamic_smem
    data = json.loads((bundle / "manifest.json").read_text())
    assert data["special_dynamic_smem"] == m.special_dynamic_smem
    # Each launch gets the shared memory of the PTX it runs.
    assert bind(m, (FakeCuda((3, 1000), "<f2"), FakeCuda((3, 1000), "<f2"))).dynamic_smem == (
        m.special_dynamic_smem
    )
    assert bind(m, (FakeCuda((3, 1100), "<f2"), FakeCuda((3, 1100), "<f2"))).dynamic_smem == (
        m.dynamic_smem
    )
    with pytest.raises(ManifestError, match="no specialised variant"):
        replace(m, special=(), special_ptx_file="")
