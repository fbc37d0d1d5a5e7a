"""Registry tests: pass names, their lit files and docs, and the stage table's pipelines."""

import subprocess
import sys
from pathlib import Path

import pytest

from tilec.context import make_context
from tilec.passes import BUILTIN, BUILTIN_PASSES, PASSES
from tilec.pipeline import build_pass_manager
from tilec.stages import STAGE_KEYS, STAGES, stage_of_input

ROOT = Path(__file__).resolve().parents[2]


def test_every_builtin_pass_is_registered_under_its_name() -> None:
    assert BUILTIN_PASSES, "no built-in passes"
    for cls in BUILTIN_PASSES:
        assert PASSES[cls.name] is cls
    for key, cls in PASSES.items():
        assert key == cls.name
        assert key == key.lower() and " " not in key and "_" not in key


def test_the_table_names_each_pass_module_and_nothing_loads_before_its_lookup() -> None:
    """`BUILTIN` says where each built-in pass lives; importing tilec.passes imports none of
    them, and looking one up imports that module alone (with what it imports itself)."""
    assert [c.name for c in BUILTIN_PASSES] == list(BUILTIN)
    for name, module in BUILTIN.items():
        assert PASSES[name].__module__ == f"tilec.passes.{module}"
    probe = (
        "import sys, tilec.passes as P\n"
        "before = sorted(m for m in sys.modules if m.startswith('tilec.passes.'))\n"
        "cls = P.PASSES['tile-verify']\n"
        "after = sorted(m for m in sys.modules if m.startswith('tilec.passes.'))\n"
        "print(before, *(f'tilec.passes.{m}' in after for m in ('tile_verify', 'tile_mma')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["['tilec.passes.base']", "True", "False"], out.stdout


@pytest.mark.parametrize("cls", BUILTIN_PASSES, ids=lambda c: c.name)
def test_every_pass_has_a_lit_file_a_module_and_a_doc_heading(cls: type) -> None:
    assert (ROOT / "test" / "passes" / f"{cls.name}.mlir").is_file()
    assert cls.__module__ == f"tilec.passes.{cls.name.replace('-', '_')}"
    assert cls.summary(), "the docstring's first line is the --list-passes summary"
    assert f"## `{cls.name}`" in (ROOT / "docs" / "passes.md").read_text()


# Passes with no error of their own: they transform what they recognise and leave the rest.
NO_ERRORS = {
    "pipeline-steady-state": "versions a lowered loop it recognises, else leaves it",
    "tile-async-waits": "places waits for what it finds; its .bad is convert-tile-copies' refusal",
}


@pytest.mark.parametrize("cls", BUILTIN_PASSES, ids=lambda c: c.name)
def test_every_pass_has_a_negative_lit_case(cls: type) -> None:
    """Each pass's lit file runs `<name>.mlir.bad` with --verify-diagnostics: its located
    errors, each expected where it must be reported."""
    if cls.name in NO_ERRORS:
        source = (ROOT / "passes" / f"{cls.name.replace('-', '_')}.py").read_text()
        assert "LoweringError(" not in source and "self.error(" not in source, cls.name
        return
    bad = ROOT / "test" / "passes" / f"{cls.name}.mlir.bad"
    assert bad.is_file(), f"{bad} is missing"
    assert "expected-error" in bad.read_text()
    lit = (ROOT / "test" / "passes" / f"{cls.name}.mlir").read_text()
    assert "--verify-diagnostics %s.bad" in lit, f"{cls.name}.mlir does not run its .bad file"


def test_stage_ladder_order_and_extensions() -> None:
    assert STAGE_KEYS == ("ast", "tile", "lowered", "gpu", "nvvm", "llvm", "ptx", "cubin")
    assert stage_of_input("k.gpu.mlir") == "gpu"
    assert stage_of_input("k.tile.mlir") == "tile"
    assert stage_of_input("k.tile") == "source"
    assert stage_of_input("k.ll") == "llvm"
    assert stage_of_input("k.txt") is None


@pytest.mark.parametrize("stage", [s for s in STAGES if s.pipeline], ids=lambda s: s.key)
def test_every_stage_pipeline_parses_against_the_pinned_mlir(stage) -> None:  # noqa: ANN001
    ctx = make_context()
    with ctx:
        pm = build_pass_manager(ctx, stage.pipeline)
    assert "builtin.module" in str(pm)
