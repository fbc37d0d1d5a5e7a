"""Bad command lines and inputs, as a new user types them, through the real entry points: each
is refused with a message that says what is wrong, a non-zero status, no traceback and no
internal error ("a bug in tilec"), within seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TWO_KERNELS = """\
kernel first(X: f32[N]) grid(1) threads(32) target(sm_80) { }
kernel second(X: f32[N]) grid(1) threads(32) target(sm_80) { }
"""


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of bad (and a few good) inputs, made the current directory."""
    (tmp_path / "k.tile").write_text((EXAMPLES / "vadd.tile").read_text())
    (tmp_path / "two.tile").write_text(TWO_KERNELS)
    (tmp_path / "empty.tile").write_text("")
    (tmp_path / "comments.tile").write_text("// only a comment\n")
    (tmp_path / "syntax.tile").write_text("kernel (\n")
    (tmp_path / "binary.tile").write_bytes(bytes(range(256)))
    (tmp_path / "garbage.ptx").write_text("garbage\n")
    (tmp_path / "garbage.ll").write_text("garbage\n")
    (tmp_path / "m.mlir").write_text("module {}\n")
    (tmp_path / "junk.tile.mlir").write_text("junk\n")
    (tmp_path / "afile").write_text("")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "notes.txt").write_text("")
    (tmp_path / "syntaxes").mkdir()
    (tmp_path / "syntaxes" / "s.tile").write_text("kernel k( {\n}\n")
    (tmp_path / "broken_plugin.py").write_text("raise ValueError('boom')\n")
    (tmp_path / "div.tile").write_text(
        "kernel k() grid(1) threads(32) target(sm_80) {\n  let x = 1 / 0\n}\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


# (arguments of `tilec`, what stderr must say)
TILEC = [
    (["compile", "missing.tile"], "error: 'missing.tile' does not exist"),
    (["compile", "missing"], "error: 'missing' does not exist"),
    (["compile", "folder"], "error: 'folder' is a directory, not a file"),
    (["compile", "empty.tile"], "empty.tile:1:1: error: no kernel in this file"),
    (["compile", "comments.tile"], "error: no kernel in this file"),
    (["compile", "syntax.tile"], "syntax.tile:1:8: error: expected a kernel name, found '('"),
    (["compile", "binary.tile"], "binary.tile:2:118: error: source is not valid UTF-8 (byte 0x80)"),
    (["compile", "m.mlir"], "error: cannot tell which stage 'm.mlir' holds"),
    (["compile", "junk.tile.mlir"], "junk.tile.mlir:1:1: error: custom op 'junk' is unknown"),
    (["compile", "garbage.ptx"], "error: 'garbage.ptx' holds no PTX: it has no '.version'"),
    (["compile", "garbage.ptx", "--emit", "cubin"], "'garbage.ptx' holds no PTX"),
    (["compile", "garbage.ll"], "error: no target: the input names none; pass --arch"),
    (["compile", "garbage.ll", "--arch", "sm_80"], "error: invalid LLVM IR"),
    (["compile", "k.tile", "--from", "bogus"], "error: --from bogus: unknown stage"),
    (["compile", "k.tile", "--from", "ast"], "--from ast: tilec cannot read the ast stage back"),
    (["compile", "k.tile", "--from", "cubin"], "note: --from takes tile, lowered, gpu, nvvm"),
    (["compile", "k.tile", "--from", "ptx"], "error: 'k.tile' holds no PTX"),
    (
        ["compile", "k.tile", "--dump-dir", "afile"],
        "cannot write 'k.tile.mlir' there: it is a file",
    ),
    (["compile", "k.tile", "-o", "folder"], "error: cannot write 'folder': Is a directory"),
    (["compile", "k.tile", "-o", "no/dir/k.ptx"], "cannot write 'no/dir/k.ptx'"),
    (["compile", "k.tile", "--emit", "bogus"], "error: unknown stage 'bogus'"),
    (["compile", "k.tile", "--arch", "sm_70"], "invalid choice: 'sm_70'"),
    (["compile", "k.tile", "--emit"], "expected one argument"),
    (["compile", "k.tile", "-D", "BLOCK"], "error: -D expects NAME=VALUE, got 'BLOCK'"),
    (["compile", "k.tile", "-D", "=3"], "error: -D expects NAME=VALUE, got '=3'"),
    (["compile", "k.tile", "-D", "BLOCK=abc"], "'abc' is not a 64-bit integer"),
    (["compile", "k.tile", "-D", "BLOCK=1.5"], "'1.5' is not a 64-bit integer"),
    (["compile", "k.tile", "-D", "BLOCK=0"], "error: cdiv by 0"),
    (["compile", "k.tile", "-D", "NOPE=3"], "no compile-time parameter named 'NOPE'"),
    (["compile", "k.tile", "--pass-pipeline", "bogus"], "--pass-pipeline expects STAGE=PIPELINE"),
    (["compile", "k.tile", "--pass-pipeline", "tile=cse"], "made by no pass pipeline"),
    (["compile", "k.tile", "--pass-pipeline", "lowered=nope"], "'nope' does not refer to"),
    (["compile", "k.tile", "--pass-pipeline", "lowered=cse{"], "unbalanced brackets"),
    (["compile", "k.tile", "--ptx-via", "bogus"], "invalid choice: 'bogus'"),
    (["compile", "k.tile", "--emit", "tile", "--resource-usage"], "leave --emit out (ptx)"),
    (["compile", "k.tile", "--emit", "tile", "--report", "contract"], "a passport reads the ptx"),
    (["compile", "k.tile", "--load-pass-plugin", "no.py"], "pass plugin 'no.py' does not exist"),
    (["compile", "k.tile", "--load-pass-plugin", "broken_plugin.py"], "ValueError: boom"),
    (
        ["compile", "k.tile", "--emit", "tile", "--mlir-elide-elementsattrs-if-larger=abc"],
        "takes a count (N >= 0), not 'abc'",
    ),
    (["compile", "div.tile"], "div.tile:2:13: error: integer division by zero"),
    (["compile", "junk.tile.mlir", "--emit", "ast"], "error: custom op 'junk' is unknown"),
    (["report", "missing.tile"], "error: 'missing.tile' does not exist"),
    (["report", "folder"], "error: 'folder' is a directory, not a file"),
    (["report", "empty.tile"], "error: no kernel in this file"),
    (["check", "missing.tile"], "error: 'missing.tile' does not exist"),
    (["check", "folder"], "'folder' is a folder with no .tile file"),
    (["check", "k.tile", "missing", "folder"], "error: 'missing' does not exist"),
    (["check", "empty.tile"], "empty.tile:1:1: error: no kernel in this file"),
    (["check", "syntaxes"], "syntaxes/s.tile:1:11: error: expected an argument name"),
    (["check", "k.tile", "-D", "BLOCK=abc"], "'abc' is not a 64-bit integer"),
    (["build", "missing.tile", "-o", "out"], "error: 'missing.tile' does not exist"),
    (["build", "folder", "-o", "out"], "'folder' is a folder with no .tile file"),
    (["build", "k.tile", "-o", "afile"], "-o afile: a file, not a folder"),
    (["build", "syntax.tile", "-o", "out"], "tilec build: 1 of 1 inputs failed: syntax.tile"),
    (["run", "missing"], "missing: not a tilec bundle (no manifest.json)"),
    (["run", "folder"], "folder: not a tilec bundle (no manifest.json)"),
    (["run", "k.tile", "--size", "N"], "error: --size expects NAME=INT, got 'N'"),
    (["run", "k.tile", "--sms", "abc"], "invalid int value: 'abc'"),
    (["bench"], "run 'python bench/bench_memory.py' on a GPU machine"),
    (["bogus"], "invalid choice: 'bogus'"),
    (["layout", ""], "<expr>:1:1: error: expected an expression, found end of file"),
    (["layout", "crd2idx((9,9), (4,8):(8,1))"], "crd2idx takes (crd, shape, stride), got 2"),
    (["layout", "(1048576,1048576):(1,1048576)", "--table"], "over the limit of 65536"),
    (["layout", "(65536,65536):(1,65536)", "--svg", "x.svg"], "4294967296 cells"),
    (["layout", "(32,4):(1,32)", "--tv", "(1024,1024)", "--table"], "1048576 cells"),
    (["layout", "(4,8):(8,1)", "--tv", "(4"], "<tv>:1:3: error: expected ',' or ')'"),
    (["layout", "(4,8):(8,1)", "--tv", "4", "--table"], "a thread-value tile is (M,N)"),
    (["layout", "(2,2,2):(1,2,4)", "--table"], "it has rank 3, pictures need rank 1 or 2"),
    (["layout", "(4,8):(8,1)", "--svg", "afile/x.svg"], "cannot write afile/x.svg"),
    (["layout", "1 / 0"], "<expr>:1:3: error: integer division by zero"),
    (["layout", "size(8:1, 5)"], "mode 5 of 8:1 does not exist"),
    (["layout", "composition(8:1, 0)"], "shape entry 0 must be at least 1"),
    (["layout", "1.5"], "tilec layout prints layouts, int-tuples and `_`, not a float"),
]

# (arguments of `tile-opt`, what stderr must say)
TILE_OPT = [
    (["missing.mlir"], "tile-opt: error: cannot read 'missing.mlir': No such file"),
    (["folder"], "tile-opt: error: cannot read 'folder': Is a directory"),
    (["binary.tile"], "error:"),
    (["m.mlir", "-o", "no/dir/out.mlir"], "its folder 'no/dir' does not exist"),
    (["m.mlir", "-o", "folder"], "cannot write '-o folder': Is a directory"),
    (["--mlir-elide-elementsattrs-if-larger=abc", "m.mlir"], "takes a count (N >= 0), not 'abc'"),
    (["--mlir-elide-resource-strings-if-larger=", "m.mlir"], "takes a count (N >= 0), not ''"),
    (["-p", "bogus", "m.mlir"], "'bogus' does not refer to a registered pass"),
    (["-p", "cse{", "m.mlir"], "unbalanced brackets in pipeline 'cse{'"),
    (["-p", "layout-fold{nope=1}", "m.mlir"], "pass 'layout-fold' has no option 'nope'"),
    (["-p", "tile-pipeline{smem-limit=abc}", "m.mlir"], "bad value 'abc'"),
    (["--bogus-flag", "m.mlir"], "unknown command line argument '--bogus-flag'"),
    (["m.mlir", "m.mlir"], "one input file at most, got 2"),
    (["--pass-pipeline=builtin.module(cse)", "-cse", "m.mlir"], "can't be used with individual"),
    (["--load-pass-plugin", "no.py", "m.mlir"], "pass plugin 'no.py' does not exist"),
    (["--verify-each=maybe", "m.mlir"], "'verify-each' takes true or false, not 'maybe'"),
    (["--split-input-file=x", "m.mlir"], "a split marker needs 3 characters or more"),
    (["-o"], "'-o' needs a value"),
    (["--mlir-print-ir-before=cse", "m.mlir"], "is not available in tile-opt"),
]


def run_in_process(main: object, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple:
    """(status, stdout, stderr, seconds) of `main(argv)`; an exception escaping it is what
    the entry point would report as an internal error, so the test fails on it."""
    start = time.monotonic()
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err, time.monotonic() - start


def assert_refused(status: object, out: str, err: str, seconds: float, said: str) -> None:
    """A non-zero exit with `said` on stderr, no traceback, no internal error, no hang."""
    assert status not in (0, None), out
    assert said in err, err
    assert "Traceback" not in err + out and "internal error" not in err
    assert seconds < 10


@pytest.mark.parametrize(
    ("argv", "said"), TILEC, ids=lambda v: " ".join(v) if isinstance(v, list) else None
)
def test_tilec_refuses_with_a_message(
    inputs: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    from tilec.cli import main

    assert_refused(*run_in_process(main, argv, capsys), said)


@pytest.mark.parametrize(
    ("argv", "said"), TILE_OPT, ids=lambda v: " ".join(v) if isinstance(v, list) else None
)
def test_tile_opt_refuses_with_a_message(
    inputs: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    from tilec.opt import main

    assert_refused(*run_in_process(main, argv, capsys), said)


def test_check_fails_on_any_failing_input_and_says_which(
    inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tilec.cli import main

    status, out, err, _ = run_in_process(main, ["check", "empty.tile", "syntax.tile"], capsys)
    assert status == 1
    assert out.splitlines() == [
        "empty.tile: not compiled: no kernel in this file: it needs at least one "
        "'kernel NAME(...) {...}'",
        "syntax.tile: not compiled: expected a kernel name, found '('",
        "tilec check: 2 inputs, 2 failed (2 not compiled): empty.tile, syntax.tile",
    ]
    assert "syntax.tile:1:8: error:" in err  # located, with its line and caret
    status, out, _, _ = run_in_process(main, ["check", "m.mlir"], capsys)
    assert status == 1
    assert out.splitlines()[0] == "m.mlir: not a .tile file: contracts are read from .tile sources"


def test_the_api_names_a_missing_kernel(inputs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tilec

    monkeypatch.setenv("TILEC_CACHE_DIR", str(inputs / "cache"))
    with pytest.raises(
        ValueError, match="two.tile has no kernel named 'nope'; its kernels: first, second"
    ):
        tilec.compile("two.tile", kernel="nope")
    with pytest.raises(ValueError, match="has kernels first, second: pick one with kernel=NAME"):
        tilec.compile("two.tile")


def test_a_closed_pipe_ends_tilec_layout_quietly(tmp_path: Path) -> None:
    """`tilec layout ... --table | head -1`: the reader leaves; no 'Broken pipe' message."""
    tool = [sys.executable, "-c", "from tilec.tools.tilec import main; main()"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [*tool, "layout", "(256,256):(256,1)", "--table"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        status = proc.wait(timeout=60)
    assert first == b"(256,256):(256,1)\n"
    assert err == ""
    assert status == 141  # as a Unix tool killed by SIGPIPE reports it


def test_a_normal_table_still_prints(capsys: pytest.CaptureFixture[str]) -> None:
    from tilec.cli import main

    assert main(["layout", "(2,3):(3,1)", "--table"]) == 0
    assert capsys.readouterr().out.splitlines()[:4] == [
        "(2,3):(3,1)",
        "      0   1   2",
        "    +---+---+---+",
        " 0  | 0 | 1 | 2 |",
    ]


def test_list_passes_prints_whole_first_sentences() -> None:
    from tilec.opt import first_sentence, list_passes
    from tilec.passes import PASSES

    text = list_passes()
    assert max(len(line) for line in text.splitlines()) <= 100
    joined = " ".join(line.strip() for line in text.splitlines())
    for name, cls in PASSES.items():
        sentence = first_sentence(cls.__doc__)
        assert sentence.endswith("."), (name, sentence)
        assert " ".join(sentence.split()) in joined, name
    wrapped = "reconcile the earlier rungs' pending casts and erase every tile op and cast."
    assert wrapped in joined  # convert-tile-to-gpu's sentence runs onto its docstring's 2nd line
