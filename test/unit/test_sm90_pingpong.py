"""Ping-pong SM90 consumers (examples/gemm_sm90.tile, PP = 1) through ptxas: the wgmmas are not
serialised, and the contract fact `serialized` catches it when they are.

A branch on a value ptxas cannot prove warp-uniform between wgmmas that share accumulators makes
it wait for each wgmma before the next (its note C7520; about half the speed on the H200). The
consumer groups' turns branch on the group's index, which convert-tile-sm90 broadcasts from lane
0 with `shfl.sync` so that ptxas knows it is uniform; built from the thread index directly, the
same kernel is serialised, and its contract (`serialized == 0`) refuses it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tilec.build import compile_tile
from tilec.contract import ContractError
from tilec.passes.convert_tile_sm90 import Sm90Kernel

pytestmark = pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "gemm_sm90.tile")
PINGPONG = {"PP": "1", "BN": "128"}


def test_pingpong_keeps_the_wgmmas_in_flight() -> None:
    built = compile_tile(EXAMPLE, PINGPONG, None)  # the contract holds serialized == 0
    assert "shfl.sync.idx" in built.ptx
    assert built.ptx.count("bar.arrive") == 1 and "wgmma.mma_async" in built.ptx


def test_a_divergent_turn_is_serialised_and_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Sm90Kernel, "uniform_index", Sm90Kernel.consumer_index)
    with pytest.raises(ContractError) as exc:  # whole tiles (SK = 0): the split's units
        compile_tile(EXAMPLE, {**PINGPONG, "SK": "0"}, None)  # change what ptxas decides
    (error,) = exc.value.diagnostics
    assert error.message == "contract broken: serialized == 0 promised, found 1"
