// tile-pipeline: S shared stages, S-1 guarded prologue groups, wait_group S-2 + one barrier per
// iteration (at its top, or in a prefetching gemm's last k-step), the copies of tile
// min(k+S-1, ub-1) with no branch around them (past the last tile they copy it again into a
// stage nobody reads), a commit every iteration, a drain.
// RUN: tilec compile %repo/examples/gemm_sm80.tile -D BK=16 -D STAGES=4 -D PREFETCH=1 --emit tile -o %t.16.mlir
// RUN: tile-opt -p tile-pipeline %t.16.mlir | filecheck %s --check-prefix=S4
// RUN: tile-opt -p tile-pipeline --split-input-file --verify-diagnostics %s.bad
// The source's pipeline(..., prefetch = 0 | 1) wins over the pass option; without it, the option.
// RUN: sed 's/tile.prefetch_fragments = 1/tile.prefetch_fragments = 0/' %t.16.mlir | tile-opt -p tile-pipeline | filecheck %s --check-prefix=NOPRE
// RUN: sed 's/tile.prefetch_fragments = 1 : i64, //' %t.16.mlir | tile-opt -p tile-pipeline | filecheck %s --check-prefix=NOPRE
// RUN: sed 's/tile.prefetch_fragments = 1 : i64, //' %t.16.mlir | tile-opt -p "tile-pipeline{prefetch=1}" | filecheck %s --check-prefix=S4
// RUN: tilec compile %repo/examples/gemm_sm80.tile -D BN=128 -D WN=2 -D BK=64 -D PREFETCH=0 --emit tile -o %t.64.mlir
// RUN: sed 's/tile.stages = [0-9]*/tile.stages = 10/' %t.64.mlir | tile-opt -p tile-pipeline | filecheck %s --check-prefix=S5
// RUN: sed 's/tile.stages = 4/tile.stages = 1/' %t.16.mlir | tile-opt -p tile-pipeline | filecheck %s --check-prefix=S1
// RUN: sed 's/tile.stages = 4/tile.stages = 0/' %t.16.mlir | not tile-opt -p tile-pipeline 2>&1 | filecheck %s --check-prefix=ZERO

// A stage count below 1 is a located error at the loop, not a traceback.
// ZERO: error: tile.stages = 0: a pipeline needs at least 1 stage
// ZERO-NEXT: scf.for

// 4 stages of 2048 elements (8 KiB for both operands per stage) fit.
// The staged buffer's layout operand is the staged layout (tile-verify would catch a mismatch).
// S4: %[[L4:.*]] = "layout.make"() : () -> !layout.layout<"Sw<2,3,3> o 0 o (128,16,4):(16,1,2048)">
// S4-NEXT: "tile.alloc_shared"(%[[L4]]) {name = "sA"} : (!layout.layout<"Sw<2,3,3> o 0 o (128,16,4):(16,1,2048)">) -> !tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (128,16,4):(16,1,2048)">
// S4: %[[N:.*]] = "tile.size"
// Guards of tiles 0, 1, 2 against the trip count (trip counts 0, 1, 2 issue nothing past it).
// S4: %[[G0:.*]] = arith.cmpi slt, %{{.*}}, %[[N]] : index
// S4-NEXT: %[[G1:.*]] = arith.cmpi slt, %{{.*}}, %[[N]] : index
// S4-NEXT: %[[G2:.*]] = arith.cmpi slt, %{{.*}}, %[[N]] : index
// S4: scf.if %[[G0]] {
// S4: "tile.copy"{{.*}}tile.pipelined
// S4: nvvm.cp.async.commit.group
// S4: scf.if %[[G1]] {
// S4: nvvm.cp.async.commit.group
// S4: scf.if %[[G2]] {
// S4: nvvm.cp.async.commit.group
// S4-NOT: nvvm.cp.async.commit.group
// The loop's lone gemm reads both buffers, so it owns the wait: tile 0's wait (all but S-2 = 2
// groups) and barrier come before the loop, each later one inside the gemm's last k-step.
// S4-NEXT: nvvm.cp.async.wait.group 2
// S4-NEXT: "tile.barrier"
// S4-NEXT: scf.for
// S4-NOT: nvvm.cp.async.wait.group
// S4: %[[LAST:.*]] = arith.subi %[[N]], %{{.*}} : index
// S4-NEXT: %[[TK:.*]] = arith.minsi %{{.*}}, %[[LAST]] : index
// S4-NOT: scf.if
// S4: "tile.copy"{{.*}}tile.pipelined
// S4: nvvm.cp.async.commit.group
// S4-NOT: nvvm.cp.async.wait.group
// S4: "tile.gemm"{{.*}}{tile.pipelined, tile.prefetch = 2 : i64}
// S4: } {{{(tile.prefetch_fragments = 1 : i64, )?}}tile.stages = 4 : i64}
// S4-NEXT: nvvm.cp.async.wait.group 0

// Without prefetching (or with anything besides one gemm reading the buffers) each iteration
// opens with the wait and the barrier, and the gemm needs no barriers of its own.
// NOPRE: nvvm.cp.async.commit.group
// NOPRE: nvvm.cp.async.commit.group
// NOPRE: nvvm.cp.async.commit.group
// NOPRE-NEXT: scf.for
// NOPRE-NEXT: nvvm.cp.async.wait.group 2
// NOPRE-NEXT: "tile.barrier"
// NOPRE: nvvm.cp.async.commit.group
// NOPRE: "tile.gemm"{{.*}}{tile.pipelined}
// NOPRE: } {{{(tile.prefetch_fragments = 0 : i64, )?}}tile.stages = 4 : i64}
// NOPRE-NEXT: nvvm.cp.async.wait.group 0

// 10 stages of 128x64 tiles (32 KiB per stage) pass sm_80's 163 KiB of opt-in shared memory
// (the frontend rejects this; the IR is edited past it): the pass pipelines the 5 that fit
// (wait_group 3) and records what was asked. outline-tile-kernels moves them to dynamic smem.
// S5: %[[L5:.*]] = "layout.make"() : () -> !layout.layout<"Sw<3,3,3> o 0 o (128,64,5):(64,1,8192)">
// S5-NEXT: "tile.alloc_shared"(%[[L5]]) {name = "sA"} : ({{.*}}) -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64,5):(64,1,8192)">
// S5-COUNT-4: nvvm.cp.async.commit.group
// S5-NOT: nvvm.cp.async.commit.group
// S5: scf.for
// S5-NEXT: nvvm.cp.async.wait.group 3
// S5: } {tile.prefetch_fragments = 0 : i64, tile.stages = 5 : i64, tile.stages_requested = 10 : i64, tile.stages_smem_limit = {{[0-9]+}} : i64}
// S5-NEXT: nvvm.cp.async.wait.group 0

// One stage: left alone (the lowering waits after each copy, as before).
// S1-NOT: nvgpu
// S1: "tile.copy"
// S1-NOT: tile.pipelined
// S1: {tile.prefetch_fragments = 1 : i64, tile.stages = 1 : i64}
