// tile-specialize: the sizes a kernel's `tile.specialize` names are clamped to [1, bound], so
// that int-range-optimizations and canonicalize fold what the range decides (the variant the
// runtime launches for 1 <= N <= 64). A loop over cdiv(N, 64) - 1 whole tiles disappears, its
// carried value becomes its initial one; a loop the range does not decide stays.
// RUN: tile-opt -p "tile-specialize,func.func(int-range-optimizations),canonicalize,cse" --split-input-file %s | filecheck %s
// RUN: tile-opt -p "tile-specialize,func.func(int-range-optimizations),canonicalize,cse" --split-input-file --verify-diagnostics %s.bad
// Without the pass the same folding leaves both loops (the general variant).
// RUN: tile-opt -p "func.func(int-range-optimizations),canonicalize,cse" --split-input-file %s | filecheck %s --check-prefix=GENERAL

// CHECK-LABEL: func.func @rows(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: index, %[[N:[a-z0-9]+]]: index)
// CHECK: %[[LO:.*]] = arith.maxsi %[[N]], %c1
// CHECK: %[[CL:.*]] = arith.minsi %[[LO]], %c64
// The tile of the last (here: the only) column block is at 0: cdiv(N, 64) - 1 folded.
// CHECK: "tile.local_tile"(%{{.*}}, %{{.*}}, %c0)
// The loop over whole tiles is gone; the other loop (over the rows R, not specialised) stays.
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// CHECK-NOT: scf.for
// CHECK: return
// GENERAL-LABEL: func.func @rows(
// GENERAL-COUNT-2: scf.for
func.func @rows(%x: !llvm.ptr, %r: index, %n: index) attributes {tile.kernel, tile.arg_names = ["X", "R", "N"], tile.specialize = {N = 64 : i64}, tile.threads = array<i64: 64, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %t = "tile.make_tensor"(%x, %r, %n, %n) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %tiles = arith.ceildivsi %n, %c64 : index
  %last = arith.subi %tiles, %c1 : index
  scf.for %k = %c0 to %last step %c1 {
    %v = "tile.local_tile"(%t, %c0, %k) {coord = "(?,?)", tile = array<i64: 1, 64>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(1,64):(?,1)">
    "tile.fill"(%v) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(1,64):(?,1)">) -> ()
  }
  %w = "tile.local_tile"(%t, %c0, %last) {coord = "(?,?)", tile = array<i64: 1, 64>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(1,64):(?,1)">
  scf.for %i = %c0 to %r step %c1 {
    "tile.fill"(%w) {value = 1.000000e+00 : f32} : (!tile.tensor<f32, "global", "(1,64):(?,1)">) -> ()
  }
  return
}

// -----

// A kernel without tile.specialize is left as it is.
// CHECK-LABEL: func.func @general(
// CHECK-NOT: arith.minsi
// CHECK: scf.for
// GENERAL-LABEL: func.func @general(
func.func @general(%x: !llvm.ptr, %n: index) attributes {tile.kernel, tile.arg_names = ["X", "N"], tile.threads = array<i64: 64, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %t = "tile.make_tensor"(%x, %n) {name = "X"} : (!llvm.ptr, index) -> !tile.tensor<f32, "global", "(?):(1)">
  %tiles = arith.ceildivsi %n, %c64 : index
  %last = arith.subi %tiles, %c1 : index
  scf.for %k = %c0 to %last step %c1 {
    %v = "tile.local_tile"(%t, %k) {coord = "(?)", tile = array<i64: 64>} : (!tile.tensor<f32, "global", "(?):(1)">, index) -> !tile.tensor<f32, "global", "64:1">
    "tile.fill"(%v) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "64:1">) -> ()
  }
  return
}
