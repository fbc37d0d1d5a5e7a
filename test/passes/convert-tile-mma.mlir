// convert-tile-mma: MMA accumulators and gemms become ldmatrix + mma.sync by the atom's family
// (sm80 here). It reads the views convert-tile-views cast; the accumulator is each thread's
// scalars as a cast (a fill a cast of its constant, a gemm a cast of the mma.sync results,
// which the ops after it read); an accumulator a loop carries is read as a pending cast of its
// iter_arg, for convert-tile-to-gpu to reconcile when it rebuilds the loop. A prefetching gemm's
// loop is rebuilt here to carry the next k-step's fragments after its own values.
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-mma %s | filecheck %s
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-elementwise,convert-tile-memory,convert-tile-mma,convert-tile-to-gpu %s | filecheck %s --check-prefix=LOWERED
// RUN: not tile-opt -p tile-distribute,convert-tile-views,convert-tile-to-gpu %s 2>&1 | filecheck %s --check-prefix=ALONE
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-mma --split-input-file --verify-diagnostics %s.bad
// RUN: tilec compile %repo/examples/gemm_sm80.tile --arch sm_80 --emit tile -o %t.g.mlir
// RUN: tile-opt -p layout-fold,tile-verify,tile-pipeline,tile-async-waits,tile-carry-accumulators,tile-distribute,convert-tile-views,convert-tile-mma %t.g.mlir | filecheck %s --check-prefix=PREFETCH

// A 64x64 f32 accumulator over 2x2 warps (TM = 2, TN = 4 atoms a warp), K = 32 (two k-steps):
// per k-step two A ldmatrix (one per m-atom), two B (a pair of n-atoms each), eight mma.sync;
// a barrier before (the copies that filled the tiles) and after (the next copies).
// CHECK-LABEL: func.func @gemm(
// CHECK: %[[U:.*]] = llvm.mlir.undef : f32
// CHECK: builtin.unrealized_conversion_cast %[[U]], %[[U]], {{.*}} to !tile.frag<f32, "(4,2,4):(1,4,8)", "((4,8,2,2),(2,2,2,4)):((128,1,32,2048),(64,8,16,512))">
// CHECK: builtin.unrealized_conversion_cast %[[Z:cst[_0-9]*]], %[[Z]], {{.*}} to !tile.frag<f32
// CHECK: gpu.barrier
// CHECK-COUNT-2: nvvm.ldmatrix
// CHECK: nvvm.ldmatrix
// CHECK: nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[%[[Z]], %[[Z]], %[[Z]], %[[Z]]]
// CHECK-COUNT-15: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK: %[[C:.*]] = builtin.unrealized_conversion_cast {{.*}} to !tile.frag<f32
// CHECK: "tile.store"(%[[C]],
// CHECK-NOT: "tile.gemm"
// CHECK-NOT: "tile.tiled_mma"
// LOWERED-LABEL: func.func @gemm(
// LOWERED-COUNT-16: nvvm.mma.sync
// LOWERED-NOT: "tile.
// LOWERED-NOT: unrealized_conversion_cast
// LOWERED: return
// ALONE: error: 'tile.tiled_mma' is lowered by convert-tile-mma, which must run first
func.func @gemm(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 64, 64>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(64,64):(?,1)">
  %sa = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "(64,32):(32,1)">
  %sb = "tile.alloc_shared"() {name = "sB"} : () -> !tile.tensor<f16, "shared", "(64,32):(32,1)">
  %m = "tile.tiled_mma"() : () -> !tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">
  %acc = "tile.fragment"(%m) {block_shape = array<i64: 64, 64>} : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
  "tile.gemm"(%m, %sa, %sb, %acc) : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">, !tile.tensor<f16, "shared", "(64,32):(32,1)">, !tile.tensor<f16, "shared", "(64,32):(32,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
  "tile.store"(%acc, %1) : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f32, "global", "(64,64):(?,1)">) -> ()
  return
}

// A gemm in its value form in a K loop (tile-carry-accumulators' form): the loop is left to
// convert-tile-to-gpu; the gemm reads its iter_arg as a pending cast to the 32 scalars it will
// be, and its result, a cast of the mma.sync results, is what the loop yields.
// CHECK-LABEL: func.func @carried(
// CHECK: scf.for %{{.*}} iter_args(%[[X:.*]] = %{{.*}}) -> (!tile.frag<f32, "(4,2,4):(1,4,8)"
// CHECK: %[[P:.*]]:32 = builtin.unrealized_conversion_cast %[[X]] : !tile.frag<{{.*}}> to f32, {{.*}} {tile.pending}
// CHECK: nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[%[[P]]#0, %[[P]]#1, %[[P]]#2, %[[P]]#3]
// CHECK: %[[Y:.*]] = builtin.unrealized_conversion_cast {{.*}} to !tile.frag<f32
// CHECK: scf.yield %[[Y]] : !tile.frag<f32
// The whole ladder: the loop carries the 32 scalars, the pending cast reconciled away.
// LOWERED-LABEL: func.func @carried(
// LOWERED: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// LOWERED-COUNT-16: nvvm.mma.sync
// LOWERED: scf.yield
// LOWERED-NOT: tile.pending
// LOWERED: return
func.func @carried(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 64, 64>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(64,64):(?,1)">
  %sa = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "(64,32):(32,1)">
  %sb = "tile.alloc_shared"() {name = "sB"} : () -> !tile.tensor<f16, "shared", "(64,32):(32,1)">
  %m = "tile.tiled_mma"() : () -> !tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">
  %acc = "tile.fragment"(%m) {block_shape = array<i64: 64, 64>} : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %k = %c0 to %arg1 step %c1 iter_args(%x = %acc) -> (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) {
    %y = "tile.gemm"(%m, %sa, %sb, %x) : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">, !tile.tensor<f16, "shared", "(64,32):(32,1)">, !tile.tensor<f16, "shared", "(64,32):(32,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
    scf.yield %y : !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  }
  "tile.store"(%r, %1) : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f32, "global", "(64,64):(?,1)">) -> ()
  return
}

// examples/gemm_sm80.tile (128x256 tiles over 8 warps, prefetching): its K loop, rebuilt here,
// carries the accumulator (still a tile value, for convert-tile-to-gpu) and after it the next
// k-step's 32 fragment registers (A: 4 m-atoms x 4, B: 8 n-atoms x 2), loaded before the loop
// and passed on by its yield; 128 mma.sync a k-tile (4 k-steps of 4 x 8 atoms).
// PREFETCH: nvvm.ldmatrix
// PREFETCH: scf.for {{.*}} -> (!tile.frag<f32, "(4,4,8):(1,4,16)", {{.*}}>, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) {
// PREFETCH: tile.pending
// PREFETCH-COUNT-128: nvvm.mma.sync
// PREFETCH: scf.yield %{{.*}}, {{.*}} : !tile.frag<f32, "(4,4,8):(1,4,16)", {{.*}}>, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32
// PREFETCH-NOT: "tile.gemm"
