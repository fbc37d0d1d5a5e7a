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


def test_arch_older_than_the_kernels_target_is_a_located_error(capsys) -> None:  # noqa: ANN001
    # An sm_90a kernel built with --arch sm_80 aborted inside LLVM ("Cannot select: intrinsic
    # %llvm.nvvm.fence.mbarrier_init.release.cluster"), killing the process; a newer --arch
    # for an older kernel stays fine.
    from pathlib import Path

    from tilec.cli import main

    examples = Path(__file__).resolve().parents[2] / "examples"
    code = main(["compile", str(examples / "gemm_sm90.tile"), "--arch", "sm_80", "--emit", "tile"])
    err = capsys.readouterr().err
    assert code == 1
    lines = (examples / "gemm_sm90.tile").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "target(sm_90a)" in text)
    assert f"gemm_sm90.tile:{line}:" in err
    assert "targets sm_90a, which --arch sm_80 predates" in err
    assert main(["compile", str(examples / "vadd.tile"), "--arch", "sm_90a", "--emit", "tile"]) == 0


def test_run_refuses_a_bad_sm_count_before_touching_a_gpu(capsys, tmp_path) -> None:  # noqa: ANN001
    # `tilec run --sms N` holds a persistent grid to N SMs (Kernel.with_sms); a count that
    # holds no block is a diagnostic, not a traceback, and needs no GPU to be found.
    from pathlib import Path

    from tilec.build import build
    from tilec.cli import main

    examples = Path(__file__).resolve().parents[2] / "examples"
    (bundle,) = build(str(examples / "vadd.tile"), tmp_path, {}, None)
    assert main(["run", str(bundle), "--sms", "0"]) == 1
    assert "with_sms: a positive SM count, got 0" in capsys.readouterr().err
