"""The tilec CLI on a machine without MLIR: building the parser and `run` import no MLIR."""

import subprocess
import sys

PROBE = """
import sys
import tilec.cli
tilec.cli.build_parser()
import tilec.runtime.measure
assert "mlir" not in sys.modules and "llvmlite" not in sys.modules, sorted(
    m for m in sys.modules if m.startswith(("mlir", "llvmlite"))
)
"""


def test_cli_parser_and_run_path_import_no_mlir() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_help_lists_every_stage(capsys) -> None:  # noqa: ANN001
    from tilec.cli import main
    from tilec.stages import STAGE_KEYS

    try:
        main(["compile", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert all(f"  {key} " in out for key in STAGE_KEYS)
