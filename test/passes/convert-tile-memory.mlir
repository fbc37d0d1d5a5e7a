// convert-tile-memory: loads and stores of register tensors become per-thread accesses. The
// accumulator's epilogue (load C like the accumulator, add, store) is deferred: the load, the
// add (which convert-tile-elementwise left) and the store are lowered together, each pair of C
// loaded, added and stored in turn, under the store's fast-path test. The accumulator itself,
// a fragment convert-tile-to-gpu lowers later, is read as a pending cast. Then a (4,256) row
// tile loaded (16-byte chunks under a uniform test, predicated otherwise) and stored.
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory %s | filecheck %s
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu %s | filecheck %s --check-prefix=LOWERED
// RUN: not tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu %s 2>&1 | filecheck %s --check-prefix=ALONE
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-memory --split-input-file --verify-diagnostics %s.bad
// RUN: not tile-opt -p tile-distribute,convert-tile-memory %s 2>&1 | filecheck %s --check-prefix=NOVIEWS

// CHECK-LABEL: func.func @epi(
// CHECK: %[[ACC:.*]] = "tile.fragment"
// CHECK: "tile.fill"(%[[ACC]])
// The accumulator read twice, as the load's `like` and as the add's operand.
// CHECK: builtin.unrealized_conversion_cast %[[ACC]] : {{.*}} {tile.pending}
// CHECK: %[[A:.*]]:32 = builtin.unrealized_conversion_cast %[[ACC]] : {{.*}} {tile.pending}
// CHECK: scf.if
// CHECK: %[[C:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr<1> -> vector<2xf32>
// CHECK: %[[C0:.*]] = llvm.extractelement %[[C]]
// CHECK: arith.addf %[[A]]#0, %[[C0]] fastmath<contract> : f32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<1>
// CHECK: } else {
// The row tile: 8 values a thread, two 16-byte chunks, then stored.
// CHECK: %[[X:.*]]:8 = scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: builtin.unrealized_conversion_cast %[[X]]#0, %[[X]]#1, {{.*}} : f32, f32, f32, f32, f32, f32, f32, f32 to !tile.frag<f32, "(4,256):(1,4)"
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK-NOT: "tile.load"
// CHECK-NOT: "tile.store"
// CHECK-NOT: "tile.binary"
// CHECK: return

// LOWERED-LABEL: func.func @epi(
// LOWERED-NOT: unrealized_conversion_cast
// LOWERED-NOT: "tile.
// LOWERED: return

// ALONE: error: 'tile.load' is lowered by convert-tile-memory, which must run first

// Without convert-tile-views, the view the load reads is the error, at the view.
// NOVIEWS: error: 'tile.local_tile' is lowered by convert-tile-views, which must run first
func.func @epi(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index, %arg3: index) attributes {tile.arg_names = ["C", "D", "M", "N"], tile.bindings = {M = ["C.shape[0]", "D.shape[0]"], N = ["C.shape[1]", "D.shape[1]"]}, tile.grid = ["1"], tile.kernel, tile.params = {}, tile.smem_bytes = 0 : i64, tile.target = "sm_80", tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2, %arg3, %arg3) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg2, %arg3, %arg3) {name = "D"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %2 = "tile.tiled_mma"() : () -> !tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">
  %3 = "tile.fragment"(%2) {block_shape = array<i64: 64, 64>} : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  "tile.fill"(%3) {value = 1.000000e+00 : f32} : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
  %4 = "tile.local_tile"(%0) {coord = "(0,0)", tile = array<i64: 64, 64>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">) -> !tile.tensor<f32, "global", "(64,64):(?,1)">
  %5 = "tile.load"(%4, %3) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(64,64):(?,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  %6 = "tile.binary"(%3, %5) {op = "add"} : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  %7 = "tile.local_tile"(%1) {coord = "(0,0)", tile = array<i64: 64, 64>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">) -> !tile.tensor<f32, "global", "(64,64):(?,1)">
  "tile.store"(%6, %7) : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f32, "global", "(64,64):(?,1)">) -> ()
  %8 = "tile.local_tile"(%0) {coord = "(0,0)", tile = array<i64: 4, 256>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">) -> !tile.tensor<f32, "global", "(4,256):(?,1)">
  %9 = "tile.load"(%8) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(4,256):(?,1)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %10 = "tile.local_tile"(%1) {coord = "(0,0)", tile = array<i64: 4, 256>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">) -> !tile.tensor<f32, "global", "(4,256):(?,1)">
  "tile.store"(%9, %10) : (!tile.tensor<f32, "register", "(4,256):(1,4)">, !tile.tensor<f32, "global", "(4,256):(?,1)">) -> ()
  return
}
