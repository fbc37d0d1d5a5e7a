// tile-carry-accumulators: a gemm's accumulator made outside a loop becomes the loop's iter_arg,
// each such gemm its value form (%new = tile.gemm(..., %acc)), and what reads the accumulator
// after a gemm or a loop reads the new value; then convert-tile-to-gpu carries its scalars as
// it carries a var's.
// RUN: tile-opt -p tile-carry-accumulators --split-input-file %s | filecheck %s
// RUN: tile-opt -p tile-carry-accumulators,tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu --split-input-file %s | filecheck %s --check-prefix=LOWERED
// RUN: tile-opt -p tile-carry-accumulators --split-input-file --verify-diagnostics %s.bad
// RUN: tile-opt -p tile-carry-accumulators %s.prefetch | filecheck %s --check-prefix=PREFETCH
// RUN: tilec compile %repo/examples/gemm_sm80.tile --arch sm_80 --emit lowered | filecheck %s --check-prefix=PREFETCH-LOWERED
// RUN: tilec compile %repo/test/gpu/var_gemm.tile --emit lowered | filecheck %s --check-prefix=VAR

// A K loop that also counts its steps in a var (refused before the accumulator was carried):
// the lowered loop carries the 32 accumulator values and the count, 33 scalars.
// VAR: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {

// A prefetching gemm (tile-pipeline's tile.prefetch) is carried as any other.
// PREFETCH-LABEL: func.func @prefetching(
// PREFETCH: %[[ACC:.*]] = "tile.fragment"
// PREFETCH: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[X:.*]] = %[[ACC]]) -> (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) {
// PREFETCH:   %[[Y:.*]] = "tile.gemm"({{.*}}, %[[X]]) {tile.prefetch = 1 : i64} : ({{.*}}) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
// PREFETCH:   scf.yield %[[Y]]
// Lowered (examples/gemm_sm80.tile, 128x256 tiles over 8 warps): the K loop carries the
// accumulator's 128 f32 per thread, then the next k-step's 32 fragment registers that
// convert-tile-to-gpu loads before the loop (A: 4 m-atoms x 4, B: 8 n-atoms x 2).
// PREFETCH-LOWERED: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) {
// PREFETCH-LOWERED-COUNT-128: nvvm.mma.sync
// PREFETCH-LOWERED: scf.yield

// A K loop: the accumulator (made and zeroed before it) is carried; the store reads the result.
// CHECK-LABEL: func.func @k_loop(
// CHECK: %[[ACC:.*]] = "tile.fragment"
// CHECK: "tile.fill"(%[[ACC]])
// CHECK: %[[R:.*]] = scf.for {{.*}} iter_args(%[[X:.*]] = %[[ACC]]) -> (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) {
// CHECK:   %[[Y:.*]] = "tile.gemm"(%{{.*}}, %{{.*}}, %{{.*}}, %[[X]]) : ({{.*}}) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
// CHECK:   scf.yield %[[Y]] : !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
// CHECK: "tile.store"(%[[R]], %{{.*}})
// The lowered loop carries the accumulator's 32 scalars (2x2 warps on 64x64: 32 a thread).
// LOWERED-LABEL: func.func @k_loop(
// LOWERED: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// LOWERED-COUNT-16: nvvm.mma.sync
// LOWERED: scf.yield
func.func @k_loop(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
  %sa = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "(64,64):(64,1)">
  %sb = "tile.alloc_shared"() {name = "sB"} : () -> !tile.tensor<f16, "shared", "(64,64):(64,1)">
  %m = "tile.tiled_mma"() : () -> !tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">
  %acc = "tile.fragment"(%m) {block_shape = array<i64: 64, 64>} : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %k = %c0 to %arg1 step %c1 {
    "tile.gemm"(%m, %sa, %sb, %acc) : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
  }
  "tile.store"(%acc, %1) : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f16, "global", "(64,64):(?,1)">) -> ()
  return
}

// -----

// Two loops deep, the accumulator made outside both: both carry it, the inner loop's result is
// what the outer one yields; two gemms into it in one body chain.
// CHECK-LABEL: func.func @nested(
// CHECK: %[[ACC:.*]] = "tile.fragment"
// CHECK: %[[OUT:.*]] = scf.for {{.*}} iter_args(%[[A:.*]] = %[[ACC]]) -> (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) {
// CHECK:   %[[IN:.*]] = scf.for {{.*}} iter_args(%[[B:.*]] = %[[A]]) -> (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) {
// CHECK:     %[[G1:.*]] = "tile.gemm"(%{{.*}}, %{{.*}}, %{{.*}}, %[[B]])
// CHECK:     %[[G2:.*]] = "tile.gemm"(%{{.*}}, %{{.*}}, %{{.*}}, %[[G1]])
// CHECK:     scf.yield %[[G2]] : !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
// CHECK:   scf.yield %[[IN]] : !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
// CHECK: "tile.store"(%[[OUT]], %{{.*}})
func.func @nested(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
  %sa = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "(64,64):(64,1)">
  %m = "tile.tiled_mma"() : () -> !tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">
  %acc = "tile.fragment"(%m) {block_shape = array<i64: 64, 64>} : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %arg1 step %c1 {
    scf.for %k = %c0 to %arg1 step %c1 {
      "tile.gemm"(%m, %sa, %sa, %acc) : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
      "tile.gemm"(%m, %sa, %sa, %acc) : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
    }
  }
  "tile.store"(%acc, %1) : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f16, "global", "(64,64):(?,1)">) -> ()
  return
}

// -----

// Made inside the outer loop (one output tile a trip): only the K loop carries it, from the
// value the gemm before it (in the accumulator's own block) made. A prefetching gemm's
// accumulator stays in place: tile_loops carries it beside the next k-step's fragments.
// CHECK-LABEL: func.func @per_tile(
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:   %[[ACC:.*]] = "tile.fragment"
// CHECK:   %[[G:.*]] = "tile.gemm"(%{{.*}}, %{{.*}}, %{{.*}}, %[[ACC]]) : ({{.*}}) ->
// CHECK:   %[[R:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[G]]) -> (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) {
// CHECK:   "tile.store"(%[[R]], %{{.*}})
func.func @per_tile(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
  %sa = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "(64,64):(64,1)">
  %m = "tile.tiled_mma"() : () -> !tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %arg1 step %c1 {
    %acc = "tile.fragment"(%m) {block_shape = array<i64: 64, 64>} : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
    "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
    "tile.gemm"(%m, %sa, %sa, %acc) : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
    scf.for %k = %c0 to %arg1 step %c1 {
      "tile.gemm"(%m, %sa, %sa, %acc) : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f16, "shared", "(64,64):(64,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
    }
    "tile.store"(%acc, %1) : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f16, "global", "(64,64):(?,1)">) -> ()
  }
  return
}
