// convert-tile-reductions: a reduction folds each thread's values, then the lanes of a warp
// (gpu.shuffle xor), then the warps through a shared scratch row (__reduce_<kernel>) and a
// barrier; its value is a cast of one value per group of threads to its !tile.frag type. Its
// operand, a load convert-tile-to-gpu lowers later, is read as a pending cast; a one-element
// result (a type whose TV layout is plain) names its reduced spread in tile.spread, and the
// elementwise op that read it earlier as pending now reads its cast. convert-tile-to-gpu
// lowers the loads and stores, reconciles, and alone refuses a reduction.
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions %s | filecheck %s
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu %s | filecheck %s --check-prefix=LOWERED
// RUN: not tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu %s 2>&1 | filecheck %s --check-prefix=ALONE
// RUN: tile-opt -p tile-distribute,convert-tile-reductions --split-input-file --verify-diagnostics %s.bad

// CHECK: llvm.mlir.global internal @__reduce_rows_1() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<128 x f32>
// CHECK: llvm.mlir.global internal @__reduce_rows() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
// CHECK-LABEL: func.func @rows(
// CHECK: %[[X:.*]] = "tile.load"
// CHECK: %[[XS:.*]]:8 = builtin.unrealized_conversion_cast %[[X]] : {{.*}} to f32, f32, f32, f32, f32, f32, f32, f32 {tile.pending}
// CHECK: arith.maximumf %[[XS]]#0, %[[XS]]#1 : f32
// CHECK: gpu.shuffle xor
// CHECK: llvm.mlir.addressof @__reduce_rows : !llvm.ptr<3>
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: %[[M:.*]] = builtin.unrealized_conversion_cast %{{.*}}, %{{.*}} : f32, f32 to !tile.frag<f32, "(4,1):(1,4)", "(4,256):(1,0) o 0 o ((64,2),(4,2)):((16,1),(4,2))">
// CHECK: %[[S:.*]] = builtin.unrealized_conversion_cast %{{.*}} : f32 to !tile.frag<f32, "(1,1):(1,1)", "((128),(1)):((0),(0))"> {tile.spread = "(1,256):(1,0) o 0 o ((128),(4,1)):((4),(1,512))"}
// CHECK: builtin.unrealized_conversion_cast %[[S]] : {{.*}} to f32 {tile.pending}
// CHECK: "tile.store"(%[[M]],
// CHECK-NOT: "tile.reduce"

// LOWERED-LABEL: func.func @rows(
// LOWERED: gpu.shuffle xor
// LOWERED: gpu.barrier
// LOWERED-NOT: unrealized_conversion_cast
// LOWERED-NOT: "tile.
// LOWERED: return

// ALONE: error: 'tile.reduce' is lowered by convert-tile-reductions, which must run first
func.func @rows(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "x"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %2 = "tile.local_tile"(%0, %1) {coord = "(?,0)", tile = array<i64: 4, 256>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f32, "global", "(4,256):(?,1)">
  %3 = "tile.load"(%2) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(4,256):(?,1)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %4 = "tile.reduce"(%3) {kind = "max", mode = 1 : i64} : (!tile.tensor<f32, "register", "(4,256):(1,4)">) -> !tile.tensor<f32, "register", "(4,1):(1,4)">
  %5 = "tile.local_tile"(%0, %1) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f32, "global", "(1,256):(?,1)">
  %6 = "tile.load"(%5) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(1,256):(?,1)">) -> !tile.tensor<f32, "register", "(1,256):(1,1)">
  %7 = "tile.reduce"(%6) {kind = "sum", mode = 1 : i64} : (!tile.tensor<f32, "register", "(1,256):(1,1)">) -> !tile.tensor<f32, "register", "(1,1):(1,1)">
  %8 = "tile.binary"(%7, %7) {op = "add"} : (!tile.tensor<f32, "register", "(1,1):(1,1)">, !tile.tensor<f32, "register", "(1,1):(1,1)">) -> !tile.tensor<f32, "register", "(1,1):(1,1)">
  %9 = "tile.local_tile"(%0, %1) {coord = "(?,0)", tile = array<i64: 4, 1>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f32, "global", "(4,1):(?,1)">
  "tile.store"(%4, %9) : (!tile.tensor<f32, "register", "(4,1):(1,4)">, !tile.tensor<f32, "global", "(4,1):(?,1)">) -> ()
  %10 = "tile.local_tile"(%0, %1) {coord = "(?,0)", tile = array<i64: 1, 1>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f32, "global", "(1,1):(?,1)">
  "tile.store"(%8, %10) : (!tile.tensor<f32, "register", "(1,1):(1,1)">, !tile.tensor<f32, "global", "(1,1):(?,1)">) -> ()
  return
}
