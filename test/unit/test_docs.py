"""The docs cannot rot: the tutorial shows the files CI tests, verbatim."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def code_blocks(markdown: str, lang: str) -> list[str]:
    return [m.group(1) for m in re.finditer(rf"```{lang}\n(.*?)```", markdown, re.S)]


def test_tutorial_shows_the_tested_pass_and_its_lit_test_verbatim() -> None:
    doc = (ROOT / "docs" / "writing-a-pass.md").read_text()
    plugin = (ROOT / "examples" / "passes" / "mul_to_shift.py").read_text()
    lit_test = (ROOT / "test" / "examples" / "mul-to-shift.mlir").read_text()
    assert plugin in code_blocks(doc, "python")
    assert lit_test in code_blocks(doc, "mlir")


def test_readme_has_exactly_two_fresh_machine_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = code_blocks(readme, "sh")
    assert len(blocks) >= 2
    install_run, install_test = blocks[0], blocks[1]
    assert "pip install" in install_run and "tilec compile" in install_run
    assert "pip install" in install_test and "pytest" in install_test and "lit" in install_test
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest" in ci and "lit" in ci
