// pipeline-steady-state on examples/gemm_sm80.tile's main loop (128×256×64, 3 stages, no
// fragment prefetch), lowered by tile-pipeline and convert-tile-to-gpu: the copies' alignment
// tests move above the loop, their whole-tile tests are cloned there at the first and the last
// iteration, and the loop is versioned on all six. The fast copy's body holds no scf.if: 4 + 8
// plain cp.async (no source size), the commit, 128 mma.sync. The general copy keeps the
// alignment tests and always takes the zero-filling form (one copy path: fewer registers live).
// RUN: tilec compile %repo/examples/gemm_sm80.tile -D PREFETCH=0 -D NARROW=0 -D BK=64 -D STAGES=3 --emit tile -o %t.tile.mlir
// RUN: tile-opt -p tile-pipeline,tile-carry-accumulators,tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu %t.tile.mlir -o %t.low.mlir
// RUN: tile-opt -p pipeline-steady-state %t.low.mlir | filecheck %s
// RUN: tile-opt -p "pipeline-steady-state{interleave=1}" %t.low.mlir | filecheck %s --check-prefix=SPREAD
// Without the pass the loop is one, and its copies branch.
// RUN: filecheck %s --check-prefix=BEFORE < %t.low.mlir
// With narrower copies (the example's NARROW = 1 - PREFETCH), one general loop per width after
// the fast one, each holding that width's copies alone: 16-byte zero-filling, 8- and 4-byte
// cp.async.ca, then element by element.
// RUN: tilec compile %repo/examples/gemm_sm80.tile -D PREFETCH=0 -D BK=64 -D STAGES=3 --emit tile -o %t.narrow.mlir
// RUN: tile-opt -p tile-pipeline,tile-carry-accumulators,tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu,pipeline-steady-state %t.narrow.mlir | filecheck %s --check-prefix=NARROW

// CHECK-COUNT-2: nvvm.cp.async.commit.group
// A's and B's alignment: base | 2 K has no low 4 bits (the k-tile offset, a multiple of 64
// elements, needs no test).
// CHECK: llvm.ptrtoint %0
// CHECK: %[[AA:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// CHECK: llvm.ptrtoint %1
// CHECK: %[[AB:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// Each operand's whole-tile test, cloned at the first iteration (lb = 0) and at the last
// (ub - 1): iteration i copies tile min(i + 2, ub - 1), which the example reverses into k-tile
// (ub - 1) - tile, so its K offset is 64 ((ub - 1) - tile).
// CHECK: %[[LAST:.*]] = arith.subi %[[N:.*]], %{{.*}} : index
// CHECK: %[[AHEAD0:.*]] = arith.addi %c0, %{{.*}} : index
// CHECK: %[[T0:.*]] = arith.minsi %[[AHEAD0]], %{{.*}} : index
// CHECK-NEXT: arith.subi %{{.*}}, %[[T0]] : index
// CHECK: %[[WA0:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK: %[[AHEAD1:.*]] = arith.addi %[[LAST]], %{{.*}} : index
// CHECK: %[[T1:.*]] = arith.minsi %[[AHEAD1]], %{{.*}} : index
// CHECK-NEXT: arith.subi %{{.*}}, %[[T1]] : index
// CHECK: %[[WA1:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK: arith.addi %c0, %{{.*}} : index
// CHECK: %[[WB0:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK: arith.addi %[[LAST]], %{{.*}} : index
// CHECK: %[[WB1:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-NEXT: %[[AL:.*]] = arith.andi %[[AA]], %[[AB]] : i1
// CHECK-NEXT: %[[A1:.*]] = arith.andi %[[AL]], %[[WA0]] : i1
// CHECK-NEXT: %[[A2:.*]] = arith.andi %[[A1]], %[[WA1]] : i1
// CHECK-NEXT: %[[A3:.*]] = arith.andi %[[A2]], %[[WB0]] : i1
// CHECK-NEXT: %[[ALL:.*]] = arith.andi %[[A3]], %[[WB1]] : i1
// CHECK-NEXT: scf.if %[[ALL]] -> (f32
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %[[N]] step
// CHECK-NEXT: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: scf.if
// CHECK-NOT: nvvm.mma.sync
// CHECK-COUNT-12: nvvm.cp.async.shared.global {{.*}}, 16, cache =  cg : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK-NOT: scf.if
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.cp.async.commit.group
// CHECK-NOT: scf.if
// CHECK-COUNT-128: nvvm.mma.sync
// CHECK-NOT: scf.if
// CHECK: } {tile.prefetch_fragments = 0 : i64, tile.stages = 3 : i64}
// CHECK: } else {
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %[[N]] step
// CHECK-NEXT: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: tile.whole
// CHECK: } {tile.unswitch = 16 : i64}
// CHECK: nvvm.cp.async.commit.group
// CHECK: } {tile.prefetch_fragments = 0 : i64, tile.stages = 3 : i64}
// CHECK: nvvm.cp.async.wait.group 0

// interleave = 1: the fast body's 12 cp.async sit between its mma.sync, the commit
// after the last of them and before the last mma.sync.
// SPREAD: scf.if %{{.*}} -> (f32
// SPREAD: gpu.barrier
// SPREAD-NOT: nvvm.cp.async.shared.global
// SPREAD: nvvm.mma.sync
// SPREAD-COUNT-12: nvvm.cp.async.shared.global {{.*}}, 16, cache =  cg : !llvm.ptr<3>, !llvm.ptr<1>
// SPREAD-NEXT: nvvm.cp.async.commit.group
// SPREAD-NEXT: nvvm.mma.sync
// SPREAD: } else {

// BEFORE-NOT: scf.if {{.*}} -> (f32
// BEFORE: scf.for
// BEFORE: } {tile.unswitch = 16 : i64}
// BEFORE: } {tile.prefetch_fragments = 0 : i64, tile.stages = 3 : i64}
// BEFORE-NOT: scf.for

// NARROW:      scf.if %{{.*}} -> (f32
// NARROW-NEXT: scf.for
// NARROW-NOT:  {{cache = ca|-> f16|scf.if}}
// NARROW:      nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg :
// NARROW:      scf.if %{{.*}} -> (f32
// NARROW-NEXT: scf.for
// NARROW-NOT:  {{cache = ca|-> f16}}
// NARROW:      nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg, %{{.*}} :
// NARROW:      scf.if %{{.*}} -> (f32
// NARROW-NEXT: scf.for
// NARROW-NOT:  {{cache = cg|, 4, cache|-> f16}}
// NARROW:      nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 8, cache = ca, %{{.*}} :
// NARROW:      scf.if %{{.*}} -> (f32
// NARROW-NEXT: scf.for
// NARROW-NOT:  {{cache = cg|, 8, cache|-> f16}}
// NARROW:      nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache = ca, %{{.*}} :
// NARROW:      } else {
// NARROW-NEXT: scf.for
// NARROW-NOT:  cp.async.shared.global
// NARROW:      llvm.load %{{.*}} : !llvm.ptr<1> -> f16
// NARROW-NOT:  cp.async.shared.global
// NARROW:      scf.yield
