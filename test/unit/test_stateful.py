"""Stateful kernels: a module whose kernel keeps a launch's state in its globals (a split tail's
partial sums and flags) says so in its manifest (`stateful`), and the runtime orders its
launches on different streams one after another, so two never share that state at once."""

from __future__ import annotations

import dataclasses
import json

import pytest
from mlir import ir
from test_runtime import Launches, gemm_args, planned_manifest

from tilec.gpu_facts import stateful_kernels
from tilec.runtime import Kernel
from tilec.runtime.bundle import Manifest, ManifestError

GPU = """
gpu.module @kernels {
  llvm.mlir.global internal @state() {addr_space = 1 : i32} : !llvm.array<64 x i8> {
    %z = llvm.mlir.zero : !llvm.array<64 x i8>
    llvm.return %z : !llvm.array<64 x i8>
  }
  llvm.mlir.global internal constant @table(dense<1> : tensor<4xi32>) {addr_space = 1 : i32}
    : !llvm.array<4 x i32>
  llvm.mlir.global external @__tile_dynamic_smem() {addr_space = 3 : i32} : !llvm.array<0 x i8>
  gpu.func @writer() kernel {
    %p = llvm.mlir.addressof @state : !llvm.ptr<1>
    gpu.return
  }
  gpu.func @reader() kernel {
    %t = llvm.mlir.addressof @table : !llvm.ptr<1>
    %s = llvm.mlir.addressof @__tile_dynamic_smem : !llvm.ptr<3>
    gpu.return
  }
}
"""


def test_kernels_that_address_a_mutable_global_are_stateful() -> None:
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(GPU)
        assert stateful_kernels(module) == {"writer"}  # not a constant, not shared memory


def test_the_manifest_keeps_stateful() -> None:
    m = dataclasses.replace(planned_manifest(), stateful=True)
    data = m.to_json()
    assert data["stateful"] is True
    assert Manifest.from_json(json.loads(json.dumps(data))).stateful is True
    assert "stateful" not in planned_manifest().to_json()  # optional: absent reads as before
    with pytest.raises(ManifestError, match="stateful: expected true or false"):
        dataclasses.replace(planned_manifest(), stateful=1)


def orders(monkeypatch: pytest.MonkeyPatch, stateful: bool, streams: list[int]) -> list:
    from tilec.runtime import driver

    seen = Launches(monkeypatch)
    waits: list[tuple[int, int]] = []

    def order_after(s: int, earlier: int) -> bool:
        waits.append((s, earlier))
        return s != 9  # stream 9 is being captured into a graph: not ordered

    monkeypatch.setattr(driver, "order_after", order_after)
    k = Kernel(dataclasses.replace(planned_manifest(), stateful=stateful), "ptx")
    for s in streams:
        k(*gemm_args(), stream=s)
    assert [c[3] for c in seen.calls] == streams
    return waits


def test_a_stateful_kernel_waits_for_its_last_launch_on_another_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    streams = [5, 5, 7, 7, 5, 0, 0, 9, 0, 9, 7]
    # a launch captured on 9 leaves the last stream 0: the next on 0 waits for nothing
    assert orders(monkeypatch, True, streams) == [(7, 5), (5, 7), (0, 5), (9, 0), (9, 0), (7, 0)]
    assert orders(monkeypatch, False, streams) == []  # nothing shared: streams overlap freely
