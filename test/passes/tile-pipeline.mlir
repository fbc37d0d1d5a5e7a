// tile-pipeline: S shared stages, S-1 guarded prologue groups, wait_group S-2 + one barrier per
// iteration, the copies of tile k+S-1 under `k+S-1 < ub`, a commit every iteration, a drain.
// RUN: sed 's/BK: int = 32/BK: int = 16/; s/STAGES: int = [0-9]*/STAGES: int = 4/' %repo/examples/gemm_sm80.tile > %t.16.tile
// RUN: tilec compile %t.16.tile --emit tile -o %t.16.mlir
// RUN: tile-opt -p tile-pipeline %t.16.mlir | filecheck %s --check-prefix=S4
// RUN: sed 's/BK: int = 32/BK: int = 64/' %repo/examples/gemm_sm80.tile > %t.64.tile
// RUN: tilec compile %t.64.tile --emit tile -o %t.64.mlir
// RUN: sed 's/tile.stages = [0-9]*/tile.stages = 10/' %t.64.mlir | tile-opt -p tile-pipeline | filecheck %s --check-prefix=S5
// RUN: sed 's/tile.stages = 4/tile.stages = 1/' %t.16.mlir | tile-opt -p tile-pipeline | filecheck %s --check-prefix=S1
// RUN: sed 's/tile.stages = 4/tile.stages = 0/' %t.16.mlir | not tile-opt -p tile-pipeline 2>&1 | filecheck %s --check-prefix=ZERO

// A stage count below 1 is a located error at the loop, not a traceback.
// ZERO: error: tile.stages = 0: a pipeline needs at least 1 stage
// ZERO-NEXT: scf.for

// 4 stages of 2048 elements (8 KiB for both operands per stage) fit.
// S4: "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (128,16,4):(16,1,2048)">
// S4: %[[N:.*]] = "tile.size"
// Guards of tiles 0, 1, 2 against the trip count (trip counts 0, 1, 2 issue nothing past it).
// S4: %[[G0:.*]] = arith.cmpi slt, %{{.*}}, %[[N]] : index
// S4-NEXT: %[[G1:.*]] = arith.cmpi slt, %{{.*}}, %[[N]] : index
// S4-NEXT: %[[G2:.*]] = arith.cmpi slt, %{{.*}}, %[[N]] : index
// S4: scf.if %[[G0]] {
// S4: "tile.copy"{{.*}}tile.pipelined
// S4: %[[T0:.*]] = nvgpu.device_async_create_group
// S4: scf.if %[[G1]] {
// S4: %[[T1:.*]] = nvgpu.device_async_create_group %[[T0]]
// S4: scf.if %[[G2]] {
// S4: %[[T2:.*]] = nvgpu.device_async_create_group %[[T1]]
// S4-NOT: nvgpu.device_async_create_group
// S4: scf.for
// S4-NEXT: nvgpu.device_async_wait %[[T2]] {numGroups = 2 : i32}
// S4-NEXT: "tile.barrier"
// S4: %[[GK:.*]] = arith.cmpi slt, %{{.*}}, %[[N]] : index
// S4: scf.if %[[GK]] {
// S4: "tile.copy"{{.*}}tile.pipelined
// S4: nvgpu.device_async_create_group %[[T2]]
// S4: "tile.gemm"{{.*}}tile.pipelined
// S4: } {tile.stages = 4 : i64}
// S4-NEXT: nvgpu.device_async_wait %[[T2]] {numGroups = 0 : i32}

// 10 stages of 128x64 tiles (32 KiB per stage) pass sm_80's 163 KiB of opt-in shared memory
// (the frontend rejects this; the IR is edited past it): the pass pipelines the 5 that fit
// (wait_group 3) and records what was asked. outline-tile-kernels moves them to dynamic smem.
// S5: "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (128,64,5):(64,1,8192)">
// S5-COUNT-4: nvgpu.device_async_create_group
// S5-NOT: nvgpu.device_async_create_group
// S5: scf.for
// S5-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 3 : i32}
// S5: } {tile.stages = 5 : i64, tile.stages_requested = 10 : i64}
// S5-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}

// One stage: left alone (the lowering waits after each copy, as before).
// S1-NOT: nvgpu
// S1: "tile.copy"
// S1-NOT: tile.pipelined
// S1: {tile.stages = 1 : i64}
