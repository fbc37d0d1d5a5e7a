"""tile-opt on broken input: always a located error or success, never a Python exception."""

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilec.opt import main

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "test" / "passes").glob("*.mlir*"))


def run(tmp_path: Path, text: str, *flags: str) -> int:
    path = tmp_path / "input.mlir"
    path.write_text(text, errors="replace")
    return main([str(path), *flags])


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.text(max_size=200))
def test_random_text_is_a_located_error(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    assert run(tmp, text, "-p", "tile-verify,layout-fold,convert-layout-to-arith") in (0, 1)


def mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        choice = rng.random()
        if choice < 0.3:
            del lines[i]
        elif choice < 0.6:
            line = lines[i]
            cut = rng.randrange(len(line) + 1)
            lines[i] = (
                line[:cut] + rng.choice(["?", "(", ")", ",", "0", ":", '"', "%x"]) + line[cut:]
            )
        else:
            lines.insert(i, lines[rng.randrange(len(lines))])
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(30))
def test_mutated_pass_tests_never_crash(tmp_path: Path, seed: int, capsys) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    source = SEEDS[seed % len(SEEDS)].read_text()
    status = run(
        tmp_path,
        mutate(source, rng),
        "--split-input-file",
        "--allow-unregistered-dialect",
        "-p",
        "tile-verify,layout-fold,convert-layout-to-arith,canonicalize",
    )
    err = capsys.readouterr().err
    assert status in (0, 1), err
    assert "internal error" not in err and "Traceback" not in err
    if status == 1:
        assert "error:" in err
