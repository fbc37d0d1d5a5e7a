"""bench/baseline.py without a GPU: bands, verdicts, fact diffs and the file formats."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import baseline  # noqa: E402
from baseline import band, bundle_facts, compare, diff_facts, flatten, judge  # noqa: E402


def entry(ratio: float, spread: float = 0.0, facts: dict | None = None) -> dict:
    ratios = [ratio * (1 - spread / 2), ratio, ratio * (1 + spread / 2)]
    return {"ratio": ratio, "band": band(ratios), "ratios": ratios, "facts": facts or {}}


def run(kernels: dict, device: str = "NVIDIA H200", date: str = "2026-12-01") -> dict:
    return {"format": baseline.FORMAT, "date": date, "device": device, "repeats": 3,
            "kernels": kernels}  # fmt: skip


def test_band_is_the_relative_spread_with_a_floor() -> None:
    assert band([0.95, 1.0, 1.05]) == pytest.approx(0.10)
    assert band([0.60, 0.61, 0.62, 0.605]) == pytest.approx(0.02 / 0.6075)
    assert band([0.7, 0.7, 0.7]) == baseline.FLOOR
    assert band([1.0, 1.001], floor=0.0) == pytest.approx(0.001 / 1.0005)
    with pytest.raises(ValueError):
        band([])


def test_a_drop_beyond_the_band_is_flagged_and_one_inside_is_not() -> None:
    base = entry(0.60)  # band: the 2% floor
    assert judge("g", base, entry(0.60 * 0.90)).status == "SLOWER"  # the planted 10%
    assert judge("g", base, entry(0.60 * 0.979)).status == "SLOWER"
    assert judge("g", base, entry(0.60 * 0.985)).status == "ok"
    assert judge("g", base, entry(0.60 * 1.03)).status == "faster"
    assert not judge("g", base, entry(0.60 * 1.03)).alarm


def test_the_wider_band_of_baseline_and_run_decides() -> None:
    noisy_now = entry(0.60 * 0.95, spread=0.08)  # 5% down, but this run spreads 8%
    assert judge("g", entry(0.60), noisy_now).status == "ok"
    assert judge("g", entry(0.60, spread=0.08), entry(0.60 * 0.95)).status == "ok"
    assert judge("g", entry(0.60, spread=0.08), entry(0.60 * 0.91)).status == "SLOWER"


def test_missing_failed_and_new_kernels() -> None:
    verdicts = compare(
        run({"a": entry(1.0), "b": entry(1.0), "c": entry(1.0)}),
        run({"a": entry(1.0), "b": {"error": "AssertionError: wrong"}, "d": entry(0.5)}),
    )
    got = {v.kernel: v.status for v in verdicts}
    assert got == {"a": "ok", "b": "FAILED", "c": "not measured", "d": "new"}
    assert [v.kernel for v in verdicts if v.alarm] == ["b"]
    assert [v.kernel for v in verdicts] == ["a", "b", "c", "d"]


def test_fact_diff_names_each_change_and_unknowns() -> None:
    old = {"stages": 3, "spills": 0, "param STAGES": 3, "ptx": "sha256:aa", "registers": 255}
    new = {"stages": 2, "spills": 92, "param STAGES": 2, "ptx": "sha256:bb", "registers": 255,
           "bank_conflicts": 2}  # fmt: skip
    assert diff_facts(old, new) == [
        "bank_conflicts ? -> 2",
        "param STAGES 3 -> 2",
        "ptx sha256:aa -> sha256:bb",
        "spills 0 -> 92",
        "stages 3 -> 2",
    ]
    assert diff_facts(old, dict(old)) == []
    verdict = judge("g", entry(0.6, facts=old), entry(0.5, facts=new))
    assert verdict.status == "SLOWER" and "stages 3 -> 2" in verdict.changed


def test_flatten_reads_tilec_report_json() -> None:
    report = {
        "kernel": "gemm",
        "facts": {"depth": {"value": 1, "source": "x"}, "spills": {"value": 92, "source": "y"}},
        "instructions": {"mma.sync": 256},
        "contract": [
            {"promise": "depth == 1", "found": 1, "kept": True, "line": 14},
            {"promise": "spills == 0", "found": 92, "kept": False, "line": 14},
        ],
    }
    assert flatten(report) == {
        "depth": 1,
        "spills": 92,
        "count(mma.sync)": 256,
        "contract depth == 1": "kept",
        "contract spills == 0": "BROKEN (92)",
    }


def fake_bundle(folder: Path, ptx: str, stages: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "k.ptx").write_text(ptx)
    manifest = {"ptx": "k.ptx", "constants": {"STAGES": stages}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_bundle_facts_take_the_passport_only_for_the_same_ptx(tmp_path: Path) -> None:
    bundle = fake_bundle(tmp_path / "b", "// ptx one", 3)
    recorded = {str(bundle): {"ptx": baseline.ptx_hash(bundle), "facts": {"spills": 0}}}
    facts, known = bundle_facts(bundle, recorded)
    assert known and facts["spills"] == 0 and facts["param STAGES"] == 3
    (bundle / "k.ptx").write_text("// ptx two")  # rebuilt, facts not rewritten: stale
    facts, known = bundle_facts(bundle, recorded)
    assert not known and "spills" not in facts and facts["ptx"] != recorded[str(bundle)]["ptx"]


def test_check_from_saved_runs_round_trips_and_sets_the_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    base, ok, slow = tmp_path / "base.json", tmp_path / "ok.json", tmp_path / "slow.json"
    baseline.write(base, run({"gemm_f16 4096³": entry(0.62, facts={"stages": 3})}))
    baseline.write(ok, run({"gemm_f16 4096³": entry(0.615, facts={"stages": 3})}))
    baseline.write(slow, run({"gemm_f16 4096³": entry(0.55, facts={"stages": 2})}))
    assert baseline.read(base)["kernels"]["gemm_f16 4096³"]["ratio"] == 0.62
    assert baseline.main(["--check", str(base), "--measured", str(ok)]) == 0
    assert "0 flagged" in capsys.readouterr().out
    assert baseline.main(["--check", str(base), "--measured", str(slow)]) == 1
    out = capsys.readouterr().out
    assert "| gemm_f16 4096³ | 0.620 | 0.550 | -11.3% | ±2.0% | SLOWER | stages 3 -> 2 |" in out
    assert "1 flagged: gemm_f16 4096³" in out


def test_another_device_or_file_is_refused(tmp_path: Path) -> None:
    base, other, bad = tmp_path / "base.json", tmp_path / "a100.json", tmp_path / "bad.json"
    baseline.write(base, run({"vadd": entry(1.0)}))
    baseline.write(other, run({"vadd": entry(1.0)}, device="NVIDIA A100"))
    bad.write_text(json.dumps({"format": "something else"}))
    assert baseline.main(["--check", str(base), "--measured", str(other)]) == 2
    with pytest.raises(ValueError, match="not a tilec-speed-baseline"):
        baseline.read(bad)


def test_bundle_overrides_name_a_known_key() -> None:
    assert baseline._bundle("gemm_f16=build/planted/x") == ("gemm_f16", "build/planted/x")
    with pytest.raises(Exception, match="KEY=PATH"):
        baseline._bundle("gemm=build/x")
    keys = {k.key for k in baseline.KERNELS}
    assert keys == {"vadd", "transpose", "softmax", "gemm_f16", "gemm_bf16", "gemm90_bf16"}
    assert len({k.name for k in baseline.KERNELS}) == len(baseline.KERNELS) == 9


def test_measure_interleaves_kernel_and_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No GPU: a fake pair and timer; the kernel takes 2 ms per call, the reference 1.5 ms,
    except one slow repeat of the kernel (3 ms), which widens the band."""
    import tilec.runtime.measure

    order: list[str] = []
    times = iter([2.0, 1.5, 1.5, 2.0, 3.0, 1.5, 1.5, 2.0])

    def ours() -> None: ...
    def ref() -> None: ...

    def fake_time_ms(fn: object, inner: int) -> float:
        order.append("k" if fn is ours else "r")
        return next(times)

    p = baseline.Pair(ours, ref, 100.0, 100.0, "GB/s", "copy", 20)
    monkeypatch.setattr(baseline, "pair", lambda kernel, bundle: p)
    monkeypatch.setattr(tilec.runtime.measure, "time_ms", fake_time_ms)
    bundle = fake_bundle(tmp_path / "vadd_sm90a", "// ptx", 1)
    got = baseline.measure(baseline.KERNELS[0], bundle, 4, {})
    assert "".join(order) == "krrkkrrk"
    assert got["ratios"] == [0.75, 0.75, 0.5, 0.75]
    assert got["ratio"] == 0.75 and got["band"] == pytest.approx(0.25 / 0.75)
    assert got["rate"] == 50.0 and got["reference_rate"] == pytest.approx(100 / 1.5)
    assert got["facts"]["param STAGES"] == 1 and got["bundle"] == str(bundle)


def test_the_run_table_shows_rates_ratios_and_failures() -> None:
    ok = entry(0.6, spread=0.02) | {"rate": 451.2, "unit": "TFLOP/s", "reference_rate": 752.0,
                       "reference": "cuBLAS"}  # fmt: skip
    text = baseline.render_run(run({"gemm_f16 8192³": ok, "vadd": {"error": "OSError: gone"}}))
    assert (
        "| gemm_f16 8192³ | 451 TFLOP/s | 752 (cuBLAS) | 0.600 | ±2.0% | 0.594 0.600 0.606 |"
        in (text)
    )
    assert "| vadd | FAILED: OSError: gone |" in text


def test_record_then_check_end_to_end_with_a_fake_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The CLI's GPU path with torch, the bundle and the timer faked: a kernel that takes 10%
    longer after the baseline is flagged, the same one is not."""
    import types

    import tilec.runtime.measure

    cuda = types.SimpleNamespace(empty_cache=lambda: None, get_device_name=lambda: "NVIDIA H200")
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda, __version__="0"))
    kernel_ms = {"now": 1.0}

    def ours() -> None: ...

    p = baseline.Pair(ours, lambda: None, 100.0, 100.0, "GB/s", "copy", 20)
    monkeypatch.setattr(baseline, "pair", lambda kernel, bundle: p)
    monkeypatch.setattr(
        tilec.runtime.measure, "time_ms", lambda fn, inner: kernel_ms["now"] if fn is ours else 0.9
    )
    bundle = fake_bundle(tmp_path / "vadd_sm90a", "// ptx", 1)
    base = tmp_path / "base.json"
    common = ["--only", "vadd", "--bundle", f"vadd={bundle}", "--facts", str(tmp_path / "none")]
    assert baseline.main(["--record", str(base), *common]) == 0
    assert baseline.read(base)["kernels"]["vadd"]["ratio"] == pytest.approx(0.9)
    assert baseline.main(["--check", str(base), *common]) == 0
    kernel_ms["now"] = 1.1
    assert baseline.main(["--check", str(base), *common]) == 1
    assert "| vadd | 0.900 | 0.818 | -9.1% | ±2.0% | SLOWER | none |" in capsys.readouterr().out


def test_a_wider_floor_silences_a_small_drop(tmp_path: Path) -> None:
    base, now = tmp_path / "base.json", tmp_path / "now.json"
    baseline.write(base, run({"vadd": entry(1.0)}))
    baseline.write(now, run({"vadd": entry(0.96)}))
    assert baseline.main(["--check", str(base), "--measured", str(now)]) == 1
    assert baseline.main(["--check", str(base), "--measured", str(now), "--floor", "0.05"]) == 0
