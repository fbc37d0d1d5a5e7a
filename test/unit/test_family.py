"""Kernel families (compiler/runtime/family.py, `tilec family`): a family.json's builds and
rules, the choice of a build per launch signature (arch, dtypes, what the build's manifest binds,
the rules' formulas), on-demand compiles of a missing build, and tuning tables turned into
rules. Launches go to a stand-in driver (test_runtime.Launches): no GPU here."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from test_runtime import FakeCuda, Launches

from tilec.build import build
from tilec.cli import main
from tilec.runtime import driver
from tilec.runtime.family import (
    Build,
    Family,
    FamilyError,
    FamilySpec,
    Rule,
    open_family,
    read_family,
    runs_on,
)
from tilec.runtime.tuning_table import tuned

KERNEL = """
kernel rows<COLS: int = 256, T: type = f16>(X: T[R, N], Y: T[R, N])
  grid(R) threads(64) target(sm_80)
{
  store(load(local_tile(X, (1, COLS), (block.x, 0))) * 2.0, local_tile(Y, (1, COLS), (block.x, 0)))
}
"""
ARGS = (("X", "tensor"), ("Y", "tensor"))


def spec_of(source: Path, rules: list[Rule] | None = None, built: bool = True) -> FamilySpec:
    builds = {
        f"c{c}_{t}": Build(
            f"c{c}_{t}", str(source), "rows", {"COLS": str(c), "T": t}, "sm_80",
            f"c{c}_{t}" if built else "",
        )
        for c in (256, 1024)
        for t in ("f16", "f32")
    }  # fmt: skip
    rules = rules or [
        Rule(f"c{c}_{t}", (f"N <= {c}",), {"X": t}) for c in (256, 1024) for t in ("f16", "f32")
    ]
    return FamilySpec("rows", ARGS, builds, tuple(rules), sizes={"N": ("X", 1)})


@pytest.fixture(scope="module")
def family_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The family of `rows` at COLS = 256 and 1024, f16 and f32, built into a directory."""
    root = tmp_path_factory.mktemp("family")
    source = root / "rows.tile"
    source.write_text(KERNEL)
    spec = spec_of(source)
    for b in spec.builds.values():
        (bundle,) = build(str(source), root / "tmp", b.params, b.arch)
        bundle.rename(root / b.bundle)
    (root / "family.json").write_text(json.dumps(spec.to_json()))
    return root


@pytest.fixture
def sm90(monkeypatch: pytest.MonkeyPatch) -> Launches:
    monkeypatch.setattr(driver, "capability", lambda device=None: (9, 0))
    return Launches(monkeypatch)


def compiler_into(folder: Path, asked: list[str]):  # noqa: ANN201 - a family.Compiler
    """A compiler of missing builds into `folder` (as tilec.cache.cached_build is), noting each."""

    def compile_build(b: Build, root: Path) -> Path:
        asked.append(b.name)
        (bundle,) = build(b.source, folder / b.name, b.params, b.arch)
        return bundle

    return compile_build


def tensors(n: int, typestr: str = "<f2", rows: int = 4) -> tuple[FakeCuda, FakeCuda]:
    return FakeCuda((rows, n), typestr), FakeCuda((rows, n), typestr, ptr=0x7F1000000000)


def test_each_rule_chooses_its_build(family_dir: Path, sm90: Launches) -> None:
    fam = open_family(family_dir, compile_build=False)
    chosen = {n: fam.select(*tensors(n)) for n in (1, 200, 256, 257, 1000, 1024)}
    assert chosen == {
        1: "c256_f16", 200: "c256_f16", 256: "c256_f16",
        257: "c1024_f16", 1000: "c1024_f16", 1024: "c1024_f16",
    }  # fmt: skip
    assert fam.select(*tensors(300, "<f4")) == "c1024_f32"
    assert fam.select(*tensors(3, "<f4")) == "c256_f32"


def test_rules_filter_dtypes(family_dir: Path, sm90: Launches) -> None:
    spec = read_family(family_dir)
    only_f32 = spec_of(Path(spec.builds["c256_f16"].source), [Rule("c256_f32", (), {"X": "f32"})])
    fam = Family(only_f32, family_dir)
    with pytest.raises(FamilyError, match=r"no rule takes \(X: f16\[4, 100\]"):
        fam.select(*tensors(100))


def test_a_launch_goes_to_the_chosen_build_once_per_signature(
    family_dir: Path, sm90: Launches, monkeypatch: pytest.MonkeyPatch
) -> None:
    fam = open_family(family_dir, compile_build=False)
    for n in (100, 1000, 100, 1000, 700):
        fam(*tensors(n))
    assert [c[0] for c in sm90.calls] == [(4, 1, 1)] * 5
    assert set(fam._kernels) == {"c256_f16", "c1024_f16"}
    # Planned: a repeated signature does not choose again.
    monkeypatch.setattr(fam, "_choose", lambda args: 1 / 0)
    fam(*tensors(100))
    fam(*tensors(700))
    assert len(sm90.calls) == 7
    with pytest.raises(ZeroDivisionError):
        fam(*tensors(701))


def test_a_planned_launch_launches_as_the_family_call_does_with_no_choice_or_binding(
    family_dir: Path, sm90: Launches, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Family.launch (what tilec.ops keeps per signature): the build chosen and the kernel's plan
    made once; calling it with another call's pointers launches what that call would."""
    fam = open_family(family_dir, compile_build=False)
    launch = fam.launch(*tensors(700))
    assert launch is not None and launch.kernel is fam.kernel("c1024_f16") and not sm90.calls
    x, y = FakeCuda((4, 700), ptr=0x7E0000000000), FakeCuda((4, 700), ptr=0x7E1000000000)
    fam(x, y)
    monkeypatch.setattr(fam, "_choose", lambda args: 1 / 0)
    monkeypatch.setattr("tilec.runtime.kernel.bind", lambda *a, **k: 1 / 0)
    launch([0x7E0000000000, 0x7E1000000000], (x, y))
    assert len(sm90.calls) == 2 and sm90.calls[0] == sm90.calls[1]
    assert sm90.calls[1][4][:2] == [0x7E0000000000, 0x7E1000000000]
    assert fam.launch(*tensors(700)).plan is launch.plan  # the same plan, not made again


def test_a_build_a_device_cannot_run_is_passed_over(
    family_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "capability", lambda device=None: (8, 0))
    spec = read_family(family_dir)
    sm90a = {
        n: Build(b.name, b.source, b.kernel, b.params, "sm_90a", b.bundle)
        for n, b in spec.builds.items()
    }
    first = Rule("c256_f16", (), {"X": "f16"})
    fam = Family(
        FamilySpec(
            "rows",
            ARGS,
            {**sm90a, "c1024_f16": spec.builds["c1024_f16"]},
            (first, Rule("c1024_f16")),
        ),
        family_dir,
    )
    assert fam.select(*tensors(100)) == "c1024_f16"  # c256's sm_90a PTX does not load on SM 8.0
    assert (
        runs_on("sm_80", "sm_86") and runs_on("sm_80", "sm_90") and not runs_on("sm_90a", "sm_89")
    )
    assert runs_on("sm_90a", "sm_90") and not runs_on("sm_90a", "sm_100")


def test_a_rule_whose_build_refuses_the_shape_falls_through(
    family_dir: Path, sm90: Launches
) -> None:
    # No `when`: the c256 build's manifest refuses N > 256 (its requirement), so c1024 runs.
    rules = [Rule("c256_f16", (), {"X": "f16"}), Rule("c1024_f16", (), {"X": "f16"})]
    fam = Family(spec_of(Path("rows.tile"), rules), family_dir)
    assert fam.select(*tensors(256)) == "c256_f16"
    assert fam.select(*tensors(257)) == "c1024_f16"
    with pytest.raises(FamilyError, match=r"N = 2000, but this build handles N <= 1024"):
        fam.select(*tensors(2000))


def test_a_missing_build_compiles_on_demand(
    family_dir: Path, sm90: Launches, tmp_path: Path
) -> None:
    spec = read_family(family_dir)
    unbuilt = spec_of(Path(spec.builds["c256_f16"].source), built=False)
    asked: list[str] = []
    fam = Family(unbuilt, None, compiler_into(tmp_path, asked))
    fam(*tensors(900))
    fam(*tensors(901))
    assert asked == ["c1024_f16"]  # once, and only the build a launch needed
    with pytest.raises(FamilyError, match="has no bundle and nothing to compile it with"):
        Family(unbuilt, None, None).select(*tensors(900))


def test_rules_name_strides_and_pass_over_unbuilt_builds_by_them(
    family_dir: Path, sm90: Launches, tmp_path: Path
) -> None:
    """A rule may name an argument's strides (FamilySpec.strides: a GEMM's majorness): a rule
    whose stride formula fails is passed over before its build is compiled, and the formulas
    see the strides after binding too."""
    spec = read_family(family_dir)
    source = Path(spec.builds["c256_f16"].source)
    rules = [Rule("c256_f16", ("SX_R == 2 * N",)), Rule("c1024_f16", ("SX_N == 1", "N <= 1024"))]
    unbuilt = replace(spec_of(source, rules, built=False), strides={"SX_R": ("X", 0),
                                                                    "SX_N": ("X", 1)})  # fmt: skip
    assert FamilySpec.from_json(unbuilt.to_json()) == unbuilt
    asked: list[str] = []
    fam = Family(unbuilt, None, compiler_into(tmp_path, asked))
    assert fam.select(*tensors(100)) == "c1024_f16"  # row-major: X's row stride is N, not 2N
    assert asked == ["c1024_f16"]
    wide = FakeCuda((4, 100), "<f2", strides=(800, 4))  # every other element: SX_N = 2
    with pytest.raises(FamilyError, match="no rule takes"):
        fam.select(wide, FakeCuda((4, 100), "<f2", ptr=0x7F1000000000))
    assert asked == ["c1024_f16"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="x"), "not a tilec-family version 1 file"),
        (lambda d: d["rules"].append({"build": "nope"}), "names build 'nope'"),
        (lambda d: d["builds"][0].update(arch="sm_70"), "arch 'sm_70' is not one of"),
        (lambda d: d["rules"][0].update(when=["N <= "]), "rule for"),
        (lambda d: d["builds"].append(dict(d["builds"][0])), "is named twice"),
        (lambda d: d["builds"][0].update(bundle="../x"), "is not a folder name"),
        (
            lambda d: d["args"].append({"name": "z", "kind": "vector"}),
            "each kind is 'tensor' or 'scalar'",
        ),
        (lambda d: d.update(sizes={"N": ["Q", 1]}), r"sizes: each is \[a tensor argument, a dim\]"),
        (lambda d: d.update(strides={"S": ["X", -1]}), r"strides: each is \[a tensor argument"),
    ],
)
def test_bad_family_files_are_refused_by_name(tmp_path: Path, change, message: str) -> None:  # noqa: ANN001
    data = spec_of(tmp_path / "rows.tile").to_json()
    change(data)
    (tmp_path / "family.json").write_text(json.dumps(data))
    with pytest.raises(FamilyError, match=message):
        read_family(tmp_path)


def table(source: str, entries: list[dict]) -> dict:
    return {
        "format": "tilec-tuning", "format_version": 1, "source": source, "source_hash": "x",
        "kernel": "rows", "arch": "sm_80", "defines": {"T": "f16"}, "gpu": "GPU", "driver": 1,
        "tilec_version": "0", "entries": entries,
    }  # fmt: skip


def entry(n: int, cols: int) -> dict:
    from tilec.runtime.tuning import bucket

    ranked = [{"params": {"COLS": cols}, "ms": 0.01, "metric": 1.0}]
    return {
        "shape": {"R": 4, "N": n}, "when": bucket({"N": n}, ["N"]), "dtypes": {"X": "f16"},
        "best": {"COLS": cols}, "unit": "GB/s", "ranked": ranked,
    }  # fmt: skip


def test_a_tuning_table_puts_its_builds_first(
    family_dir: Path, sm90: Launches, tmp_path: Path
) -> None:
    spec = read_family(family_dir)
    source = spec.builds["c256_f16"].source
    # The table says: rows of 129..256 (N % 8 == 0) run fastest at COLS = 1024.
    with_table = tuned(spec, [table(source, [entry(200, 1024)])])
    (name,) = [n for n in with_table.builds if n.startswith("tuned_")]
    assert with_table.rules[0].build == name and with_table.rules[0].when == (
        "N > 128", "N <= 256", "N % 8 == 0",
    )  # fmt: skip
    assert with_table.builds[name].params == {"T": "f16", "COLS": "1024"}
    # built as timed: without the kernel's variant(...) clauses, kept through family.json
    assert with_table.builds[name].variants is False
    assert FamilySpec.from_json(with_table.to_json()).builds[name].variants is False
    assert FamilySpec.from_json(with_table.to_json()).builds["c256_f16"].variants is True
    compiled: list[str] = []
    fam = Family(with_table, family_dir, compiler_into(tmp_path, compiled))
    assert fam.select(*tensors(200)) == name  # the bucket, aligned
    assert fam.select(*tensors(201)) == "c256_f16"  # not aligned: the spec's rule
    assert fam.select(*tensors(100)) == "c256_f16"  # another bucket
    assert compiled == [name]


def test_a_narrower_bucket_of_a_later_table_wins_inside_it(
    family_dir: Path, sm90: Launches, tmp_path: Path
) -> None:
    from tilec.runtime.tuning import bucket

    spec = read_family(family_dir)
    source = spec.builds["c256_f16"].source
    # One table timed rows of 129..256 whole; a later one split it at 192 and found another
    # COLS best for 129..192 only.
    wide = entry(256, 1024)
    split = {**entry(192, 512), "when": bucket({"N": 192}, ["N"], [{"N": 256}])}
    assert split["when"][:2] == ["N > 128", "N <= 192"]
    with_tables = tuned(spec, [table(source, [wide]), table(source, [split])])
    tuned_rules = [r for r in with_tables.rules if r.build.startswith("tuned_")]
    by_cols = {with_tables.builds[r.build].params["COLS"]: r.build for r in tuned_rules}
    fam = Family(with_tables, family_dir, compiler_into(tmp_path, []))
    assert fam.select(*tensors(160)) == by_cols["512"]  # the split's part
    assert fam.select(*tensors(200)) == by_cols["1024"]  # the rest of the wide bucket
    # the tables' order does not decide it
    swapped = tuned(spec, [table(source, [split]), table(source, [wide])])
    assert [r.when for r in swapped.rules] == [r.when for r in with_tables.rules]


def test_the_family_command_builds_and_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "rows.tile"
    source.write_text(KERNEL)
    spec = spec_of(source, built=False)
    small = FamilySpec(
        "rows",
        ARGS,
        {"c256_f16": spec.builds["c256_f16"]},
        (Rule("c256_f16", ("N <= 256",), {"X": "f16"}),),
    )
    (tmp_path / "spec.json").write_text(json.dumps(small.to_json()))
    out = tmp_path / "fam"
    assert main(["family", "build", str(tmp_path / "spec.json"), "-o", str(out), "-j", "1"]) == 0
    written = read_family(out)
    assert written.builds["c256_f16"].bundle == "c256_f16"
    assert (out / "c256_f16" / "manifest.json").is_file()
    assert main(["family", "show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "c256_f16" in shown and "N <= 256" in shown and "COLS=256" in shown
    assert main(["family", "build", "-o", str(out)]) == 1
    assert "a SPEC file or --op NAME" in capsys.readouterr().err
    # A tuning table timed on another version of the source is built from, with a warning.
    stale, fresh = tmp_path / "stale.json", tmp_path / "fresh.json"
    stale.write_text(json.dumps(table(str(source), [])))
    digest = "sha256:" + hashlib.sha256(KERNEL.encode()).hexdigest()
    fresh.write_text(json.dumps({**table(str(source), []), "source_hash": digest}))
    cmd = ["family", "build", str(tmp_path / "spec.json"), "-o", str(out), "-j", "1", "--tuning"]
    assert main([*cmd, str(stale)]) == 0
    assert f"{stale} was tuned on another version of {source}" in capsys.readouterr().err
    assert main([*cmd, str(fresh)]) == 0
    assert "another version" not in capsys.readouterr().err


def test_a_left_out_build_is_named_and_fails_where_its_rows_are_stranded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "rows.tile"
    source.write_text(KERNEL)
    good = spec_of(source, built=False).builds["c256_f16"]
    broken = Build("c256_f16_sm90a", str(source), "nope", good.params, "sm_90a")  # no such kernel
    bucket = (("N <= 256",), {"X": "f16"})
    spec = FamilySpec(
        "rows",
        ARGS,
        {b.name: b for b in (broken, good)},
        (Rule(broken.name, *bucket), Rule(good.name, *bucket)),
    )
    (tmp_path / "spec.json").write_text(json.dumps(spec.to_json()))
    cmd = ["family", "build", str(tmp_path / "spec.json"), "-j", "1", "-o"]
    # Every target: the sm_80 build takes the bucket; the left-out one is named last.
    assert main([*cmd, str(tmp_path / "all")]) == 0
    out, err = capsys.readouterr()
    assert "1 of 2 builds built, 1 left out, 1 rules" in out
    assert "has no kernel 'nope'" in err
    assert err.splitlines()[-1] == "warning: tilec family: left out: c256_f16_sm90a"
    assert main([*cmd, str(tmp_path / "strict"), "--strict"]) == 1
    capsys.readouterr()
    # sm_90a only: its rows would go to the sm_80 build, which is not built.
    assert main([*cmd, str(tmp_path / "sm90a"), "--arch", "sm_90a"]) == 1
    out, err = capsys.readouterr()
    assert "0 of 2 builds built, 1 for other targets not built, 1 left out" in out
    assert err.splitlines()[-1] == (
        "error: tilec family: the rows of c256_f16_sm90a (N <= 256) go to c256_f16, "
        "which is not built"
    )
    assert read_family(tmp_path / "sm90a").rules == (Rule(good.name, *bucket),)
