// convert-tile-elementwise: elementwise math on register tensors becomes each thread's scalar
// math, its value a cast of the scalars to its !tile.frag type. An operand a later pass lowers
// (here the load and the reduction: convert-tile-to-gpu) is read as the scalars it will
// become, a cast of it marked tile.pending, spread as its type says (8 values a thread for the
// (4,256) tile over 128 threads, 2 for the row maxima, broadcast over their rows);
// convert-tile-to-gpu then lowers the load and the reduction and replaces each pending cast by
// the scalars it made, and alone refuses an elementwise op that is not an epilogue's.
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise %s | filecheck %s
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu %s | filecheck %s --check-prefix=LOWERED
// RUN: not tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu %s 2>&1 | filecheck %s --check-prefix=ALONE
// RUN: tile-opt -p convert-tile-elementwise --split-input-file --verify-diagnostics %s.bad

// CHECK-LABEL: func.func @rows(
// CHECK: %[[X:.*]] = "tile.load"
// CHECK: %[[R:.*]] = "tile.reduce"(%[[X]])
// CHECK: %[[XS:.*]]:8 = builtin.unrealized_conversion_cast %[[X]] : !tile.frag<f32, "(4,256):(1,4)", "((64,2),(4,2)):((16,1),(4,2))"> to f32, f32, f32, f32, f32, f32, f32, f32 {tile.pending}
// CHECK: %[[RS:.*]]:2 = builtin.unrealized_conversion_cast %[[R]] : {{.*}} to f32, f32 {tile.pending}
// CHECK: %[[D0:.*]] = arith.subf %[[XS]]#0, %[[RS]]#0 fastmath<contract> : f32
// CHECK: arith.subf %[[XS]]#3, %[[RS]]#0 fastmath<contract> : f32
// CHECK: arith.subf %[[XS]]#4, %[[RS]]#1 fastmath<contract> : f32
// CHECK: %[[D7:.*]] = arith.subf %[[XS]]#7, %[[RS]]#1 fastmath<contract> : f32
// CHECK: builtin.unrealized_conversion_cast %[[D0]], {{.*}}, %[[D7]] : f32, f32, f32, f32, f32, f32, f32, f32 to !tile.frag
// CHECK-COUNT-8: math.exp2
// CHECK-COUNT-8: arith.truncf
// CHECK: %[[Y:.*]] = builtin.unrealized_conversion_cast {{.*}} : f16, f16, f16, f16, f16, f16, f16, f16 to !tile.frag<f16,
// CHECK: "tile.store"(%[[Y]],
// CHECK-NOT: "tile.binary"
// CHECK-NOT: "tile.unary"
// CHECK-NOT: "tile.convert"

// The pending casts are gone: the subtraction reads the loaded values and the maxima.
// LOWERED-LABEL: func.func @rows(
// LOWERED: gpu.shuffle
// LOWERED: arith.subf
// LOWERED: math.exp2
// LOWERED-NOT: unrealized_conversion_cast
// LOWERED-NOT: "tile.
// LOWERED: return

// ALONE: error: 'tile.binary' is lowered by convert-tile-elementwise, which must run first
func.func @rows(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2, %arg2, %arg2) {name = "x"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg2, %arg2, %arg2) {name = "y"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %2 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %3 = "tile.local_tile"(%0, %2) {coord = "(?,0)", tile = array<i64: 4, 256>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f32, "global", "(4,256):(?,1)">
  %4 = "tile.load"(%3) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(4,256):(?,1)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %5 = "tile.reduce"(%4) {kind = "max", mode = 1 : i64} : (!tile.tensor<f32, "register", "(4,256):(1,4)">) -> !tile.tensor<f32, "register", "(4,1):(1,4)">
  %6 = "tile.binary"(%4, %5) {op = "sub"} : (!tile.tensor<f32, "register", "(4,256):(1,4)">, !tile.tensor<f32, "register", "(4,1):(1,4)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %7 = "tile.unary"(%6) {op = "exp"} : (!tile.tensor<f32, "register", "(4,256):(1,4)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %8 = "tile.convert"(%7) : (!tile.tensor<f32, "register", "(4,256):(1,4)">) -> !tile.tensor<f16, "register", "(4,256):(1,4)">
  %9 = "tile.local_tile"(%1, %2) {coord = "(?,0)", tile = array<i64: 4, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(4,256):(?,1)">
  "tile.store"(%8, %9) : (!tile.tensor<f16, "register", "(4,256):(1,4)">, !tile.tensor<f16, "global", "(4,256):(?,1)">) -> ()
  return
}

// Float comparisons are ordered (a NaN compares false), `!=` unordered (NaN != NaN holds):
// oeq, une, oge, then selects (where(x == -inf, 0, where(x != x, 1, where(x >= 2, x, 3)))).
// CHECK-LABEL: func.func @fcmp(
// CHECK-COUNT-8: arith.cmpf oeq, %{{.*}}, %cst : f32
// CHECK-COUNT-8: arith.cmpf une
// CHECK-COUNT-8: arith.cmpf oge
// CHECK-COUNT-24: arith.select

// LOWERED-LABEL: func.func @fcmp(
// LOWERED: arith.cmpf oeq
// LOWERED-NOT: "tile.
// LOWERED: return
func.func @fcmp(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index, %arg3: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2, %arg3, %arg3) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg2, %arg3, %arg3) {name = "Y"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %2 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %3 = "tile.local_tile"(%0, %2) {coord = "(?,0)", tile = array<i64: 4, 256>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f32, "global", "(4,256):(?,1)">
  %4 = "tile.load"(%3) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(4,256):(?,1)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %cst = arith.constant 0xFF800000 : f32
  %5 = "tile.compare"(%4, %cst) {pred = "eq"} : (!tile.tensor<f32, "register", "(4,256):(1,4)">, f32) -> !tile.tensor<i1, "register", "(4,256):(1,4)">
  %cst_0 = arith.constant 0.000000e+00 : f32
  %6 = "tile.compare"(%4, %4) {pred = "ne"} : (!tile.tensor<f32, "register", "(4,256):(1,4)">, !tile.tensor<f32, "register", "(4,256):(1,4)">) -> !tile.tensor<i1, "register", "(4,256):(1,4)">
  %cst_1 = arith.constant 1.000000e+00 : f32
  %cst_2 = arith.constant 2.000000e+00 : f32
  %7 = "tile.compare"(%4, %cst_2) {pred = "ge"} : (!tile.tensor<f32, "register", "(4,256):(1,4)">, f32) -> !tile.tensor<i1, "register", "(4,256):(1,4)">
  %cst_3 = arith.constant 3.000000e+00 : f32
  %8 = "tile.select"(%7, %4, %cst_3) : (!tile.tensor<i1, "register", "(4,256):(1,4)">, !tile.tensor<f32, "register", "(4,256):(1,4)">, f32) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %9 = "tile.select"(%6, %cst_1, %8) : (!tile.tensor<i1, "register", "(4,256):(1,4)">, f32, !tile.tensor<f32, "register", "(4,256):(1,4)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %10 = "tile.select"(%5, %cst_0, %9) : (!tile.tensor<i1, "register", "(4,256):(1,4)">, f32, !tile.tensor<f32, "register", "(4,256):(1,4)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %11 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %12 = "tile.local_tile"(%1, %11) {coord = "(?,0)", tile = array<i64: 4, 256>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f32, "global", "(4,256):(?,1)">
  "tile.store"(%10, %12) : (!tile.tensor<f32, "register", "(4,256):(1,4)">, !tile.tensor<f32, "global", "(4,256):(?,1)">) -> ()
  return
}
