"""A checkout named `tilec` (a plain clone's name): the lit configuration leaves paths that hold
the word alone, and `import tilec` from the folder above it gets the real package."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIT_TEST = """\
// RUN: echo %repo/examples/tilec/x.tile | filecheck %s --check-prefix=REPO
// REPO: /tilec/examples/tilec/x.tile
// RUN: tilec version | filecheck %s --check-prefix=TOOL
// TOOL: tilec
"""


def test_lit_substitutes_tool_names_only_as_commands(tmp_path: Path) -> None:
    suite = tmp_path / "tilec" / "test"
    (suite / "probe").mkdir(parents=True)
    shutil.copy(REPO / "test" / "lit.cfg.py", suite / "lit.cfg.py")
    (suite / "probe" / "paths.tile").write_text(LIT_TEST)
    lit = Path(sys.executable).with_name("lit")
    run = subprocess.run(
        [str(lit), "-v", str(suite / "probe")], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Passed: 1" in run.stdout or "Passed : 1" in run.stdout, run.stdout


def test_import_from_the_folder_above_a_checkout_named_tilec(tmp_path: Path) -> None:
    (tmp_path / "tilec").symlink_to(REPO, target_is_directory=True)
    code = "import tilec, tilec.layout, tilec.runtime; print(tilec.__version__, tilec.compile)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("0.1.0 <function compile"), run.stdout
