"""GPU tier: `tilec tune`'s timing half over a plan built where MLIR is, and its table turned
into a family that launches the best build of each shape (checked against torch).

The plan: `tilec tune examples/softmax.tile -D T=f16 --arch sm_90a --space "COLS=1024,2048
THREADS=64,128" --shapes "R=8192,N=1000 R=4096,N=1501 R=4096,N=2048" --bucket-by N
--compile-only -o build/tune/softmax` (or $TILEC_TUNE_PLAN); this file needs the runtime,
torch and a GPU.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.cli import main  # noqa: E402  (after the skips)
from tilec.runtime.formula import all_hold  # noqa: E402
from tilec.runtime.tuning import read_plan  # noqa: E402
from tilec.runtime.tuning_table import family_from_plan, read_table  # noqa: E402

PLAN = Path(
    os.environ.get("TILEC_TUNE_PLAN", Path(__file__).resolve().parents[2] / "build/tune/softmax")
)
if not (PLAN / "tune.json").is_file():
    pytest.skip(f"no tuning plan in {PLAN}", allow_module_level=True)


def test_a_tuning_table_round_trips_into_a_family(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table_path = tmp_path / "table.json"
    code = main(
        ["tune", "--from", str(PLAN), "--table", str(table_path), "--rounds", "2", "--no-cache"]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    table = read_table(table_path)
    plan = read_plan(PLAN)
    assert len(table["entries"]) == len(plan.shapes)
    for entry in table["entries"]:
        ms = [t["ms"] for t in entry["ranked"]]
        assert ms == sorted(ms) and ms[0] > 0, "ranked fastest first"
        # the fastest, or None where the baseline (the variant clauses) was faster still
        beat = entry["baseline_ms"] is None or ms[0] < entry["baseline_ms"]
        assert entry["best"] == (entry["ranked"][0]["params"] if beat else None)
    assert "of copy" in printed and table["gpu"] == torch.cuda.get_device_name()
    fam = family_from_plan(table, PLAN)
    ruled = [e for e in table["entries"] if e["best"] is not None]
    for entry in ruled:
        r, n = entry["shape"]["R"], entry["shape"]["N"]
        x = (torch.randn(r, n, device="cuda") * 4).half()
        y = torch.full_like(x, float("nan"))
        chosen = fam.spec.builds[fam.select(x, y)]
        # The first shape of the table whose bucket holds (shapes of one bucket: the first's).
        first = next(e for e in ruled if all_hold(e["when"], entry["shape"]))
        assert {k: int(v) for k, v in chosen.params.items() if k in first["best"]} == first["best"]
        fam(x, y)
        torch.cuda.synchronize()
        err = (
            (y.double() - torch.softmax(x.double(), 1)).norm() / torch.softmax(x.double(), 1).norm()
        ).item()
        assert err < 3e-3, (n, err)
    # A second run reads the cache: the same table, nothing timed again.
    again = tmp_path / "again.json"
    assert main(["tune", "--from", str(PLAN), "--table", str(again), "--rounds", "2"]) == 0
    first = [e["ranked"] for e in json.loads(table_path.read_text())["entries"]]
    assert [e["ranked"] for e in json.loads(again.read_text())["entries"]] == first
