"""Mutated examples through the whole compiler to PTX: success or a located error, never a bug.

The frontend's own fuzz tests stop at the `tile` stage; these go on through the lowering
passes and the backend, where a mutation that still type-checks can reach code the examples
never exercise.
"""

import random
import re
from pathlib import Path

import pytest

from tilec.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.tile"))
TOKEN = re.compile(r"\w+|[^\w\s]")
REPLACEMENTS = ["0", "1", "3", "7", "16", "33", "64", "4096", "(", ")", ",", "_", "f16", "bf16"]


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        spans = [(m.start(), m.end()) for m in TOKEN.finditer(text)]
        a, b = rng.choice(spans)
        choice = rng.random()
        if choice < 0.3:
            text = text[:a] + text[b:]
        elif choice < 0.5:
            c, d = rng.choice(spans)
            text = text[:a] + text[c:d] + text[b:]
        elif choice < 0.8:
            text = text[:a] + rng.choice(REPLACEMENTS) + text[b:]
        else:
            text = text[:b] + text[a:b] + text[b:]
    return text


@pytest.mark.parametrize("seed", range(40))
def test_mutated_example_compiles_or_fails_with_a_located_error(
    tmp_path: Path,
    seed: int,
    capsys,  # noqa: ANN001
) -> None:
    rng = random.Random(seed)
    path = tmp_path / "mutant.tile"
    path.write_text(mutate(EXAMPLES[seed % len(EXAMPLES)].read_text(), rng))
    status = main(["compile", str(path), "-o", str(tmp_path / "out.ptx")])
    err = capsys.readouterr().err
    assert status in (0, 1)
    if status == 1:
        assert re.search(r"mutant\.tile:\d+:\d+: error: ", err), err
