"""Contracts: the occupancy computation, instruction counts, promises and the clause's parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from tilec import backend
from tilec.build import compile_tile
from tilec.contract import ContractError, Fact, Passport, broken, count_instructions, ptx_entries
from tilec.diagnostics import Span
from tilec.frontend import check, parse_source
from tilec.frontend.contract import Promise
from tilec.targets import ctas_per_sm

KERNEL = """kernel k<S: int = 3>(x: f32[N]) grid(1) threads(64) target(sm_80)
  contract(depth == S - 1, registers <= 2 * 64, ctas_per_sm >= 2, has("ldmatrix"),
           count("mma.sync") > S, spills < 1)
{
  barrier()
}
"""


@pytest.mark.parametrize(
    ("target", "threads", "registers", "smem", "ctas"),
    [
        ("sm_80", 256, 56, 0, 4),  # 56 regs -> 1792 per warp -> 36 warps -> 4 blocks of 8
        ("sm_80", 256, 254, 147456, 1),  # 256 regs per thread: 8 warps per SM
        ("sm_80", 128, 80, 1024, 6),  # 80 regs -> 24 warps -> 6 blocks of 4
        ("sm_80", 64, 94, 61440, 2),  # shared memory: 164 KiB / 61.5 KiB
        ("sm_80", 32, 16, 0, 32),  # the block limit
        ("sm_80", 1024, 32, 0, 2),  # the thread limit
        ("sm_80", 128, 32, 200 * 1024, 0),  # one block does not fit
        ("sm_90a", 128, 32, 227 * 1024, 1),
        ("sm_90a", 384, 168, 0, 1),  # 168 regs -> 5376 per warp -> 12 warps = one block
        ("sm_86", 1024, 32, 0, 1),  # 1536 threads per SM there
    ],
)
def test_ctas_per_sm(target: str, threads: int, registers: int, smem: int, ctas: int) -> None:
    assert ctas_per_sm(target, threads, registers, smem) == ctas


PTX = """.visible .entry a(
\t.param .u64 a_param_0
)
{
\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];
\t@%p1 ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];
\t@!%p2 ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2];
\tld.global.v2.u32 {%r1, %r2}, [%rd1];
\tldmatrixx.b16 %r1;
}
.visible .entry b(
)
{
\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f2};
}
"""


def test_count_instructions() -> None:
    entries = ptx_entries(PTX)
    assert list(entries) == ["a", "b"]
    a, b = entries["a"], entries["b"]
    assert count_instructions(a, "ldmatrix") == 1  # not ldmatrixx
    assert count_instructions(a, "ld.global.v4") == 2  # predicated both ways
    assert count_instructions(a, "ld.global") == 3
    assert count_instructions(a, "ld.global.v4.u32") == 2
    assert count_instructions(a, "mma.sync") == 0
    assert count_instructions(b, "mma.sync.aligned.m16n8k16") == 1
    assert count_instructions(b, "mma.sync.aligned.m16n8k1") == 0  # whole parts only


def test_contract_parse_and_check() -> None:
    (kernel,) = check(parse_source(KERNEL, "k.tile"), {"S": "4"}).kernels
    texts = [p.text() for p in kernel.contract]
    assert texts == [
        "depth == 3",
        "registers <= 128",
        "ctas_per_sm >= 2",
        'has("ldmatrix")',
        'count("mma.sync") > 4',
        "spills < 1",
    ]
    assert [(p.span.line, p.span.col) for p in kernel.contract][:2] == [(2, 12), (2, 28)]
    depth, regs, _, has, count, spills = kernel.contract
    assert depth.holds(3) and not depth.holds(2)
    assert regs.holds(128) and not regs.holds(129)
    assert has.holds(1) and not has.holds(0)
    assert count.holds(5) and not count.holds(4)
    assert spills.holds(0) and not spills.holds(1)


VADD = """kernel vadd<LIMIT: int = 64>(x: f32[N], y: f32[N], out: f32[N])
  grid(cdiv(N, 1024)) threads(256) target(sm_80)
  contract({terms})
{{
  let t = (1024,)
  let a = load(local_tile(x, t, block.x))
  store(a + load(local_tile(y, t, block.x)), local_tile(out, t, block.x))
}}
"""


def _write(tmp_path: Path, terms: str) -> str:
    path = tmp_path / "vadd.tile"
    path.write_text(VADD.format(terms=terms))
    return str(path)


def test_build_checks_the_contract(tmp_path: Path) -> None:
    path = _write(tmp_path, 'has("ld.global.v4"), count("mma.sync") >= LIMIT')
    with pytest.raises(ContractError) as exc:
        compile_tile(path, {}, None)
    (error,) = exc.value.diagnostics
    assert error.message == 'contract broken: count("mma.sync") >= 64 promised, found 0'
    assert (error.span.line, error.span.col) == (3, 33)
    assert error.notes[0].message == "decided by PTX"
    assert compile_tile(path, {"LIMIT": "0"}, None).ptx  # kept
    unchecked = compile_tile(path, {}, None, contracts=False)
    assert unchecked.ptx == compile_tile(path, {"LIMIT": "0"}, None).ptx  # contracts only read


def test_ptxas_facts_need_ptxas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tilec.driver import CompileOptions, compile_file

    monkeypatch.setattr(backend.shutil, "which", lambda name: None)
    assert compile_tile(_write(tmp_path, 'has("ld.global.v4")'), {}, None).ptx  # PTX only
    path = _write(tmp_path, 'has("ld.global"), spills == 0')
    # A plain compile works without the toolkit: the ptxas terms are a located warning...
    artifact = compile_file(path, CompileOptions())
    (warning,) = [w for w in artifact.warnings if "ptxas" in w.message]
    assert warning.severity == "warning" and (warning.span.line, warning.span.col) == (3, 30)
    assert warning.message.startswith("contract terms that need ptxas are not checked")
    # ...while the other terms still hold the build to its word...
    with pytest.raises(ContractError, match=r'has\("ld.global.v8"\) promised, found 0'):
        compile_tile(_write(tmp_path, 'has("ld.global.v8"), spills == 0'), {}, None)
    # ...and what must answer for every fact (tilec check and report) refuses.
    path = _write(tmp_path, 'has("ld.global"), spills == 0')
    with pytest.raises(ContractError) as exc:
        compile_file(path, CompileOptions(need_ptxas=True))
    (error,) = exc.value.diagnostics
    assert error.message.startswith("contract needs ptxas: ptxas not found on PATH")
    assert (error.span.line, error.span.col) == (3, 30)


def test_a_fact_nobody_reported_is_an_error_not_a_traceback() -> None:
    span = Span("k.tile", 3, 12)
    passport = Passport(
        "k", "sm_80", {"depth": Fact(None, "tile-pipeline (no pipelined loop)")}, ""
    )
    promises = [Promise("registers", None, "<=", 4, span), Promise("depth", None, "==", 2, span)]
    assert [d.message for d in broken(passport, promises)] == [
        "contract: registers <= 4: ptxas reported nothing for kernel k",
        "contract: depth == 2: tile-pipeline (no pipelined loop)",
    ]


def test_the_clamp_regression_runs_the_lowered_stage_as_it_is() -> None:
    """contracts/regression-depth.tile replays the `lowered` stage with one option changed
    (tile-pipeline's shared-memory limit): its pass list must be the stage's, or the contract
    it checks is that of a pipeline nobody runs."""
    import re

    from tilec.stages import STAGES

    text = (Path(__file__).parents[1] / "contracts" / "regression-depth.tile").read_text()
    written = re.search(r'--pass-pipeline "lowered=([^"]*)"', text)
    assert written is not None
    lowered = next(s for s in STAGES if s.key == "lowered").pipeline
    assert written.group(1).replace("tile-pipeline{smem-limit=131072}", "tile-pipeline") == lowered
