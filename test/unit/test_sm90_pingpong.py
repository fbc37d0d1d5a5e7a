"""Ping-pong SM90 consumers (examples/gemm_sm90.tile, PP = 1) through ptxas: the wgmmas are not
serialised, and the contract fact `serialized` catches it when they are.

A branch on a value ptxas cannot prove warp-uniform between wgmmas that share accumulators makes
it wait for each wgmma before the next (its note C7520; about half the speed on the H200). The
consumer groups' turns branch on the group's index, which tile-warp-roles broadcasts from lane 0
with `shfl.sync` (sm90_pingpong.uniform_group) so that ptxas knows it is uniform; built from the
thread index directly, the same kernel is serialised, and its contract (`serialized == 0`)
refuses it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mlir import ir
from mlir.dialects import arith, gpu

from tilec.build import compile_tile
from tilec.contract import ContractError
from tilec.lowering import IndexBuilder, sm90_pingpong

pytestmark = pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "gemm_sm90.tile")
PINGPONG = {"PP": "1", "BN": "128"}


def test_pingpong_keeps_the_wgmmas_in_flight() -> None:
    built = compile_tile(EXAMPLE, PINGPONG, None)  # the contract holds serialized == 0
    assert "shfl.sync.idx" in built.ptx
    assert built.ptx.count("bar.arrive") == 1 and "wgmma.mma_async" in built.ptx


def test_a_divergent_turn_is_serialised_and_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def divergent(first: int) -> ir.Value:  # the group's index straight from the thread's
        b = IndexBuilder()
        tid = gpu.ThreadIdOp(gpu.Dimension.x).result
        return arith.SubIOp(b.value(b.div(tid, 128)), b.value(first)).result

    monkeypatch.setattr(sm90_pingpong, "uniform_group", divergent)
    with pytest.raises(ContractError) as exc:  # whole tiles (SK = 0): the split's units
        compile_tile(EXAMPLE, {**PINGPONG, "SK": "0"}, None)  # change what ptxas decides
    (error,) = exc.value.diagnostics
    assert error.message == "contract broken: serialized == 0 promised, found 1"
