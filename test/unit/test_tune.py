"""`tilec tune`'s compile half (no GPU): the candidates of a tune(...) clause or --space, built
in worker processes, each with its ptxas facts or the reason it gets no GPU time; the plan it
writes; the shapes' buckets and the tuning cache's key; bad command lines, and the timing half
without a GPU, as one-line errors."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tilec.cli import main
from tilec.runtime.bundle import read_bundle
from tilec.runtime.tuning import (
    Candidate,
    Entry,
    Plan,
    Timed,
    baseline_gain,
    bucket,
    cache_key,
    read_plan,
    render,
)
from tilec.runtime.tuning_table import tuned_rules
from tilec.tune import TuneError, check_buckets, first_error, judge, parse_shapes, parse_space

KERNEL = """
kernel rows<COLS: int = 256, THREADS: int = 64, T: type = f16>(X: T[R, N], Y: T[R, N])
  grid(R) threads(THREADS) target(sm_80)
  tune(COLS = (256, 512), THREADS = (64, 2048), COLS / THREADS < 8)
{
  store(load(local_tile(X, (1, COLS), (block.x, 0))) * 2.0, local_tile(Y, (1, COLS), (block.x, 0)))
}
"""


def test_space_and_shapes_parse() -> None:
    assert parse_space("BM=64,128 STAGES=3,4,5") == {"BM": (64, 128), "STAGES": (3, 4, 5)}
    assert parse_shapes("R=4,N=1000 R=2,N=7") == [{"R": 4, "N": 1000}, {"R": 2, "N": 7}]
    for bad in ("BM", "BM=", "BM=x", "BM=1 BM=2", "1B=2", ""):
        with pytest.raises(TuneError):
            parse_space(bad)
    for bad in ("R", "R=0", "R=-1", "R=x", ""):
        with pytest.raises(TuneError):
            parse_shapes(bad)


def test_buckets_are_powers_of_two_and_alignment() -> None:
    assert bucket({"N": 1000, "R": 3}, ["N"]) == ["N > 512", "N <= 1024", "N % 8 == 0"]
    assert bucket({"N": 1024}, ["N"]) == ["N > 512", "N <= 1024", "N % 8 == 0"]
    assert bucket({"N": 1025}, ["N"]) == ["N > 1024", "N <= 2048", "N % 8 != 0"]
    assert bucket({"N": 1}, ["N"]) == ["N <= 1", "N % 8 != 0"]
    assert bucket({"M": 2, "K": 3}, ["M", "K"]) == [
        "M > 1", "M <= 2", "M % 8 != 0", "K > 2", "K <= 4", "K % 8 != 0",
    ]  # fmt: skip


def _holds(when: list[str], sizes: dict[str, int]) -> bool:
    """Whether the sizes satisfy a bucket's formulas (NAME > a, NAME <= b, NAME % 8 ==/!= 0)."""
    for formula in when:
        name, op, value = formula.split(" ", 2)
        v = sizes[name]
        if op == "%":
            v, op, value = v % int(value.split()[0]), value.split()[1], value.split()[2]
        if not {">": v > int(value), "<=": v <= int(value), "==": v == int(value),
                "!=": v != int(value)}[op]:  # fmt: skip
            return False
    return True


def test_peers_split_a_bucket_and_still_cover_it() -> None:
    shapes = [{"M": m, "N": 4096, "K": 4096} for m in (32, 48, 64)]
    by = ["M", "N", "K"]
    whens = [bucket(s, by, shapes)[:2] for s in shapes]
    assert whens == [["M > 16", "M <= 32"], ["M > 32", "M <= 48"], ["M > 48", "M <= 64"]]
    check_buckets(shapes, by)  # three buckets now, no longer one refused
    # every size of each shape's power-of-two range and alignment class is in exactly one
    # bucket of its peers, for sets of peers of both classes (the odd ones apart)
    for values in ((40, 48, 64), (33, 35, 63, 64), (4093, 4095, 4096, 3000), (1001, 1000)):
        group = [{"N": v, "R": 7} for v in values]
        rules = [bucket(g, ["N"], group) for g in group]
        for n in range(2, 8200):
            tops = {1 << max(v - 1, 0).bit_length() for v in values}
            if (1 << max(n - 1, 0).bit_length()) not in tops:
                continue
            held = [r for r in rules if _holds(r, {"N": n})]
            if any(n % 8 == v % 8 == 0 or (n % 8 and v % 8) for v in values):
                same_class = [v for v in values if (v % 8 == 0) == (n % 8 == 0)]
                top = 1 << max(n - 1, 0).bit_length()
                if any(top // 2 < v <= top for v in same_class):
                    assert len(held) == 1, (values, n, held)


def test_peers_differ_in_one_size_only() -> None:
    by = ["M", "N"]
    shapes = [{"M": 48, "N": 4096}, {"M": 64, "N": 3000}]  # both sizes differ: no split
    assert bucket(shapes[0], by, shapes)[:2] == ["M > 32", "M <= 64"]
    with pytest.raises(TuneError, match="fall in one bucket"):
        check_buckets(shapes, by)
    odd = [{"N": 16383}, {"N": 16384}]  # another alignment class: not peers
    assert bucket(odd[1], ["N"], odd) == ["N > 8192", "N <= 16384", "N % 8 == 0"]
    with pytest.raises(TuneError, match="fall in one bucket"):
        check_buckets([{"N": 48}, {"N": 48}], ["N"])


def test_judge_prunes_what_cannot_win() -> None:
    assert (
        judge({"spills": 0, "local_memory": 0, "ctas_per_sm": 2, "warps_per_sm": 8})["pruned"]
        is None
    )
    assert "spills 24 B" in judge({"spills": 24, "local_memory": 8})["pruned"]
    assert "no block fits" in judge({"spills": 0, "local_memory": 0, "ctas_per_sm": 0})["pruned"]
    assert "2 warps an SM" in judge({"ctas_per_sm": 1, "warps_per_sm": 2})["pruned"]
    assert judge({})["pruned"] is None  # no ptxas: nothing known, nothing pruned


def test_cache_key_changes_with_what_decides_a_result() -> None:
    plan = Plan("k.tile", "sha256:a", "rows", "sm_80", {}, [], ["N"], [Candidate({"COLS": 256})])
    base = cache_key(plan, ["N <= 1024"], {"X": "f16"}, {"gpu": "H200", "driver": 1})
    assert base == cache_key(plan, ["N <= 1024"], {"X": "f16"}, {"gpu": "H200", "driver": 1})
    assert base != cache_key(plan, ["N <= 2048"], {"X": "f16"}, {"gpu": "H200", "driver": 1})
    assert base != cache_key(plan, ["N <= 1024"], {"X": "bf16"}, {"gpu": "H200", "driver": 1})
    assert base != cache_key(plan, ["N <= 1024"], {"X": "f16"}, {"gpu": "H100", "driver": 1})
    assert base != cache_key(plan, ["N <= 1024"], {"X": "f16"}, {"gpu": "H200", "driver": 2})
    other = Plan("k.tile", "sha256:b", "rows", "sm_80", {}, [], ["N"], [Candidate({"COLS": 256})])
    assert base != cache_key(other, ["N <= 1024"], {"X": "f16"}, {"gpu": "H200", "driver": 1})


def test_compile_only_writes_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "rows.tile"
    source.write_text(KERNEL)
    out = tmp_path / "plan"
    code = main([
        "tune", str(source), "--shapes", "R=64,N=300 R=64,N=600", "--bucket-by", "N",
        "--compile-only", "-o", str(out), "-j", "2",
    ])  # fmt: skip
    assert code == 0, capsys.readouterr()
    plan = read_plan(out)
    # tune(...): 2 x 2 candidates less COLS / THREADS >= 8 (512 / 64): three.
    assert [(c.params["COLS"], c.params["THREADS"]) for c in plan.candidates] == [
        (256, 64), (256, 2048), (512, 2048),
    ]  # fmt: skip
    ok, big, big2 = plan.candidates
    assert ok.pruned is None and (out / ok.bundle / "manifest.json").is_file()
    assert big.pruned.startswith("does not build") and "1024" in big.pruned  # threads(2048)
    assert big2.pruned.startswith("does not build")
    if shutil.which("ptxas"):
        assert (
            ok.facts["spills"] == 0 and ok.facts["registers"] > 0 and ok.facts["warps_per_sm"] >= 4
        )
    assert plan.shapes == [{"R": 64, "N": 300}, {"R": 64, "N": 600}] and plan.bucket_by == ["N"]
    printed = capsys.readouterr().out
    assert "3 candidates, 1 to time" in printed and "pruned COLS=256 THREADS=2048" in printed
    # The timing half needs a GPU: without one, one line and status 1.
    code = main(["tune", "--from", str(out), "--no-cache"])
    err = capsys.readouterr().err
    if code != 0:
        assert err.startswith("error: tilec tune:") and "Traceback" not in err


def test_space_overrides_the_clause_and_names_parameters(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    source = tmp_path / "rows.tile"
    source.write_text(KERNEL)
    code = main(
        [
            "tune",
            str(source),
            "--space",
            "BOGUS=1,2",
            "--shapes",
            "R=1,N=1",
            "--compile-only",
            "-o",
            str(tmp_path / "p"),
        ]
    )
    assert code == 1 and "--space names BOGUS, not parameters of rows" in capsys.readouterr().err
    code = main(["tune", str(source), "--compile-only"])
    assert code == 1 and "needs --shapes" in capsys.readouterr().err
    code = main(["tune", "--from", str(tmp_path / "nothing")])
    assert code == 1 and "cannot read a tuning plan" in capsys.readouterr().err
    code = main(
        [
            "tune",
            str(source),
            "--shapes",
            "R=1,N=1",
            "--bucket-by",
            "M",
            "--compile-only",
            "-o",
            str(tmp_path / "p"),
        ]
    )
    assert code == 1 and "--bucket-by M: not in shape" in capsys.readouterr().err
    # one N twice is one bucket: the second would be reported as the first (2560 and 4096 would
    # split (2048, 4096] between them: test_peers_split_a_bucket_and_still_cover_it)
    shapes = "R=4,N=4096 R=8,N=4096"
    code = main(["tune", str(source), "--shapes", shapes, "--bucket-by", "N", "--compile-only"])
    err = capsys.readouterr().err
    assert code == 1 and "R=4,N=4096 and R=8,N=4096 fall in one bucket" in err


def test_a_tune_clause_error_is_located(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    source = tmp_path / "rows.tile"
    source.write_text(KERNEL.replace("THREADS = (64, 2048)", "THREADS = (64, 64)"))
    assert (
        main(
            [
                "tune",
                str(source),
                "--shapes",
                "R=1,N=1",
                "--compile-only",
                "-o",
                str(tmp_path / "p"),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert "rows.tile:4:" in err and "THREADS's candidates must be distinct" in err
    assert "Traceback" not in err


def test_plan_json_round_trips(tmp_path: Path) -> None:
    plan = Plan(
        "k.tile",
        "h",
        "rows",
        "sm_80",
        {"T": "f16"},
        [{"N": 3}],
        ["N"],
        [Candidate({"A": 1}, "c0/x", {"spills": 0}, None)],
        "2*N",
        "softmax",
    )
    (tmp_path / "tune.json").write_text(json.dumps(plan.to_json()))
    assert read_plan(tmp_path) == plan


VARIANTS = KERNEL.replace(
    "  tune(COLS = (256, 512), THREADS = (64, 2048), COLS / THREADS < 8)\n",
    "  tune(COLS = (256, 512))\n  variant(N > 256, COLS = 512)\n",
)


def test_candidates_run_as_named_and_the_baseline_keeps_its_variants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A candidate's bundle holds no variant(...) builds (a variant would launch in its place
    and the table would credit the candidate with another build's time); the baseline, the
    kernel at its defaults, holds them: it is what the hand-written clauses run."""
    source = tmp_path / "rows.tile"
    source.write_text(VARIANTS)
    out = tmp_path / "plan"
    code = main(["tune", str(source), "--shapes", "R=4,N=300", "--compile-only", "-o", str(out)])
    assert code == 0, capsys.readouterr()
    plan = read_plan(out)
    assert [c.params["COLS"] for c in plan.candidates] == [256, 512]
    for c in plan.candidates:
        manifest = read_bundle(out / c.bundle)[0]
        assert manifest.variants == () and not (out / c.bundle / "variant").exists()
    assert plan.baseline.startswith("baseline/")
    base = read_bundle(out / plan.baseline)[0]
    assert len(base.variants) == 1 and (out / plan.baseline / "variant").is_dir()


def test_the_baseline_is_timed_beside_and_summed_up() -> None:
    def shape(best: float, base: float | None) -> Entry:
        ranked = [Timed({"COLS": 512}, best, 1.0), Timed({"COLS": 256}, 2 * best, 0.5)]
        return Entry({"N": 300}, ["N <= 512"], {"X": "f16"}, ranked, "GB/s", None, {}, base)

    # 1.21x on one shape; on the other no candidate beats the baseline, which keeps it (1x)
    assert baseline_gain([shape(1.0, 1.21), shape(1.21, 1.0)]) == pytest.approx(1.1)
    slower = shape(1.21, 1.0).to_json()
    assert slower["best"] is None and shape(1.0, 1.21).to_json()["best"] == {"COLS": 512}
    table = {"defines": {}, "gpu": "G", "entries": [slower, shape(1.0, 1.21).to_json()]}
    assert [r.when for r in tuned_rules(table)] == [("N <= 512",)]  # the kept shape: no rule
    kept = Plan("k.tile", "h", "rows", "sm_80", {}, [], ["N"], [], baseline="b")
    assert "the baseline keeps this shape" in render(kept, shape(1.21, 1.0), None)
    assert baseline_gain([shape(1.0, 1.1), shape(2.0, None)]) == pytest.approx(1.1)
    assert baseline_gain([shape(1.0, None)]) is None
    plan = Plan("k.tile", "h", "rows", "sm_80", {}, [], ["N"], [], baseline="baseline/rows")
    text = render(plan, shape(0.010, 0.012), None)
    assert "baseline (defaults, variant clauses on): 12.0 µs" in text and "1.200x" in text
    assert Entry.from_json(shape(0.01, 0.012).to_json()).baseline_ms == 0.012
    key = cache_key(plan, ["N <= 512"], {}, {"gpu": "G", "driver": 1})
    plan.baseline = ""
    assert key != cache_key(plan, ["N <= 512"], {}, {"gpu": "G", "driver": 1})


class FakeTensor:
    """The few torch.Tensor methods tune_outputs uses, over a numpy array (no torch here)."""

    def __init__(self, a: object) -> None:
        import numpy as np

        self.a = np.array(a, dtype=np.float64)

    def clone(self) -> FakeTensor:
        return FakeTensor(self.a)

    def copy_(self, other: FakeTensor) -> None:
        self.a[...] = other.a

    def fill_(self, value: float) -> None:
        self.a[...] = value

    def double(self) -> FakeTensor:
        return self.clone()

    def isfinite(self) -> FakeTensor:
        import numpy as np

        return FakeTensor(np.isfinite(self.a))

    def all(self) -> bool:
        return bool(self.a.all())

    def norm(self) -> float:
        import numpy as np

        return float(np.linalg.norm(self.a))

    def __sub__(self, other: FakeTensor) -> FakeTensor:
        return FakeTensor(self.a - other.a)


def test_a_candidate_whose_outputs_differ_from_the_baselines_is_not_timed() -> None:
    """Each build runs once before timing: outputs it only writes start NaN (an unwritten
    element shows), outputs it also reads start as they were; a build whose outputs are not
    the baseline's within the tolerance is left out with why; a baseline with NaN outputs
    judges nothing."""
    from types import SimpleNamespace

    from tilec.runtime.tune_outputs import OUTPUT_TOLERANCE, check_outputs, judge_outputs

    torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None))
    x, y, acc = FakeTensor([1.0, 2.0]), FakeTensor([5.0, 5.0]), FakeTensor([1.0, 1.0])
    args = [x, y, acc]
    outs = [(1, False), (2, True)]  # y written, acc read and written

    def build(scale: float, skip: bool = False):  # noqa: ANN202
        def run() -> None:
            if not skip:
                y.a[:] = x.a * scale
            acc.a[:] += x.a

        return run

    fns = {"c0": build(2.0), "c1": build(2.0 * (1 + OUTPUT_TOLERANCE / 2)), "c2": build(3.0),
           "c3": build(2.0, skip=True), "baseline": build(2.0)}  # fmt: skip
    wrong = check_outputs(fns, args, outs, torch)
    assert set(wrong) == {"c2", "c3"}, wrong
    assert "output 0 differs" in wrong["c2"] and "relative error 0.5" in wrong["c2"]
    assert "relative error inf" in wrong["c3"], "an unwritten output is NaN, not the last run's"
    assert list(acc.a) == [2.0, 3.0], "an inout output starts from its first contents each run"
    assert judge_outputs({"baseline": [math.inf], "c0": [math.inf]}, 0.1) == {
        "baseline": "its outputs hold NaN or infinity: no build checked against them"
    }


def test_a_pruned_candidate_names_its_error_not_a_warning_before_it() -> None:
    from tilec.diagnostics import Diagnostic, DiagnosticError

    warn = Diagnostic("warning", "invalid layout: shape entry 0 must be at least 1", None)
    err = Diagnostic("error", "tile extent 64 is not a multiple of 128", None)
    assert (
        first_error(DiagnosticError([warn, err]))
        == "error: tile extent 64 is not a multiple of 128"
    )
    assert first_error(DiagnosticError([warn])).startswith("warning: invalid layout")


def test_torch_operands_follow_the_unit_stride():
    """The tuner's torch operands are laid out as the build binds them: an MN-major operand
    ((M, K):(1, lda), gemm_sm90.tile's MA = 1) is the transpose of a row-major one, a K-major
    one row-major, a broadcast mode (stride 0) expanded (tilec.nn.Linear's dW = dY^T X is timed
    on MN-major operands; the row-major ones it was once given were refused at every candidate)."""
    torch = pytest.importorskip("torch")
    from tilec.runtime.params import TensorParam
    from tilec.runtime.tuning import torch_tensor

    mn = TensorParam("A", "f16", ("M", "K"), (1, "lda"))
    k_major = TensorParam("B", "f16", ("N", "K"), ("ldb", 1))
    bias = TensorParam("bias", "f16", ("M", "N"), (0, 1))
    a = torch_tensor(torch, mn, (48, 80), torch.float16, "cpu")
    b = torch_tensor(torch, k_major, (48, 80), torch.float16, "cpu")
    c = torch_tensor(torch, bias, (48, 80), torch.float16, "cpu")
    assert a.shape == b.shape == c.shape == (48, 80)
    assert a.stride() == (1, 48) and b.stride() == (80, 1) and c.stride() == (0, 1)
    assert a.float().std() > 0.5  # randn, not zeros
