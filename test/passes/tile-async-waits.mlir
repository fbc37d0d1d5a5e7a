// tile-async-waits: each cp.async copy outside tile-pipeline closes its own group
// (tile.async_commit), and only an access that could see one unfinished waits
// (tile.async_wait {pending = n}: the n newest groups stay in flight). convert-tile-to-gpu then
// lowers both one to one (the LOWERED prefix).
// RUN: tile-opt -p tile-async-waits --split-input-file %s | filecheck %s
// RUN: tile-opt -p tile-async-waits,tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu --split-input-file %s | filecheck %s --check-prefix=LOWERED
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu --split-input-file --verify-diagnostics %s.bad

// At the loop's top the previous iteration's copy may be in flight: wait for all. The copy
// into sX issued after the barrier stays in flight through the load of sZ (not its buffer),
// the reduction and the store into Y (not its source); the load of sX after the loop waits.
// CHECK-LABEL: func.func @inflight(
// CHECK:       "tile.copy"
// CHECK-NEXT:  "tile.async_commit"()
// CHECK:       "tile.copy"
// CHECK-NEXT:  "tile.async_commit"()
// CHECK-NOT:   tile.async_wait
// CHECK:       scf.for
// CHECK-NEXT:  "tile.async_wait"() {pending = 0 : i64}
// CHECK-NEXT:  "tile.load"(%3)
// CHECK:       "tile.barrier"
// CHECK:       "tile.copy"(%{{.*}}, %3)
// CHECK-NEXT:  "tile.async_commit"()
// CHECK-NOT:   tile.async_wait
// CHECK:       "tile.store"
// CHECK-NEXT:  }
// CHECK-NEXT:  "tile.async_wait"() {pending = 0 : i64}
// CHECK-NEXT:  "tile.load"(%3)
// LOWERED-LABEL: func.func @inflight(
// LOWERED:       nvvm.cp.async.commit.group
// LOWERED:       nvvm.cp.async.commit.group
// LOWERED-NOT:   nvvm.cp.async.wait.group
// LOWERED:       scf.for
// LOWERED-NEXT:  nvvm.cp.async.wait.group 0
// LOWERED:       gpu.barrier
// LOWERED:       nvvm.cp.async.commit.group
// LOWERED-NOT:   nvvm.cp.async.wait.group
// LOWERED:       {{^    [}]$}}
// LOWERED-NEXT:  nvvm.cp.async.wait.group 0
func.func @inflight(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: index, %arg4: index) attributes {tile.kernel, tile.threads = array<i64: 32, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg3, %arg4, %arg4) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg3, %arg4, %arg4) {name = "Y"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %2 = "tile.make_tensor"(%arg2, %arg3, %arg4, %arg4) {name = "Z"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %3 = "tile.alloc_shared"() {name = "sX"} : () -> !tile.tensor<f16, "shared", "(1,256):(1,1)">
  %4 = "tile.alloc_shared"() {name = "sZ"} : () -> !tile.tensor<f16, "shared", "(1,256):(1,1)">
  %5 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %6 = "tile.local_tile"(%0, %5) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
  "tile.copy"(%6, %3) {atom = "cp_async.cg.16"} : (!tile.tensor<f16, "global", "(1,256):(?,1)">, !tile.tensor<f16, "shared", "(1,256):(1,1)">) -> ()
  %7 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %8 = "tile.local_tile"(%2, %7) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
  "tile.copy"(%8, %4) {atom = "cp_async.cg.16"} : (!tile.tensor<f16, "global", "(1,256):(?,1)">, !tile.tensor<f16, "shared", "(1,256):(1,1)">) -> ()
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %arg5 = %c0 to %c4 step %c1 {
    %12 = "tile.load"(%3) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "shared", "(1,256):(1,1)">) -> !tile.tensor<f16, "register", "(1,256):(1,1)">
    %13 = "tile.convert"(%12) : (!tile.tensor<f16, "register", "(1,256):(1,1)">) -> !tile.tensor<f32, "register", "(1,256):(1,1)">
    "tile.barrier"() : () -> ()
    %14 = "tile.block_id"() {dim = 0 : i64} : () -> index
    %15 = arith.addi %14, %arg5 : index
    %16 = "tile.local_tile"(%0, %15) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
    "tile.copy"(%16, %3) {atom = "cp_async.cg.16"} : (!tile.tensor<f16, "global", "(1,256):(?,1)">, !tile.tensor<f16, "shared", "(1,256):(1,1)">) -> ()
    %17 = "tile.load"(%4) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "shared", "(1,256):(1,1)">) -> !tile.tensor<f16, "register", "(1,256):(1,1)">
    %18 = "tile.convert"(%17) : (!tile.tensor<f16, "register", "(1,256):(1,1)">) -> !tile.tensor<f32, "register", "(1,256):(1,1)">
    %19 = "tile.reduce"(%13) {kind = "sum", mode = 1 : i64} : (!tile.tensor<f32, "register", "(1,256):(1,1)">) -> !tile.tensor<f32, "register", "(1,1):(1,1)">
    %20 = "tile.binary"(%13, %19) {op = "div"} : (!tile.tensor<f32, "register", "(1,256):(1,1)">, !tile.tensor<f32, "register", "(1,1):(1,1)">) -> !tile.tensor<f32, "register", "(1,256):(1,1)">
    %21 = "tile.binary"(%20, %18) {op = "add"} : (!tile.tensor<f32, "register", "(1,256):(1,1)">, !tile.tensor<f32, "register", "(1,256):(1,1)">) -> !tile.tensor<f32, "register", "(1,256):(1,1)">
    %22 = "tile.block_id"() {dim = 0 : i64} : () -> index
    %23 = "tile.local_tile"(%1, %22) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
    "tile.store"(%21, %23) : (!tile.tensor<f32, "register", "(1,256):(1,1)">, !tile.tensor<f16, "global", "(1,256):(?,1)">) -> ()
  }
  %9 = "tile.load"(%3) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "shared", "(1,256):(1,1)">) -> !tile.tensor<f16, "register", "(1,256):(1,1)">
  %10 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %11 = "tile.local_tile"(%0, %10) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
  "tile.store"(%9, %11) : (!tile.tensor<f16, "register", "(1,256):(1,1)">, !tile.tensor<f16, "global", "(1,256):(?,1)">) -> ()
  return
}

// -----

// Two groups in flight: the load of sX (the older group's buffer) waits for all but the
// newest, and the store into Y runs with the newer one in flight; the load of sZ waits for it.
// CHECK-LABEL: func.func @older(
// CHECK:       "tile.async_commit"()
// CHECK:       "tile.async_commit"()
// CHECK-NEXT:  "tile.async_wait"() {pending = 1 : i64}
// CHECK-NEXT:  "tile.load"(%3)
// CHECK-NOT:   tile.async_wait
// CHECK:       "tile.store"
// CHECK-NEXT:  "tile.async_wait"() {pending = 0 : i64}
// CHECK-NEXT:  "tile.load"(%4)
// CHECK-NOT:   tile.async_wait
// LOWERED-LABEL: func.func @older(
// LOWERED:       nvvm.cp.async.wait.group 1
// LOWERED:       nvvm.cp.async.wait.group 0
func.func @older(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: index, %arg4: index) attributes {tile.kernel, tile.threads = array<i64: 32, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg3, %arg4, %arg4) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg3, %arg4, %arg4) {name = "Y"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %2 = "tile.make_tensor"(%arg2, %arg3, %arg4, %arg4) {name = "Z"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %3 = "tile.alloc_shared"() {name = "sX"} : () -> !tile.tensor<f16, "shared", "(1,256):(1,1)">
  %4 = "tile.alloc_shared"() {name = "sZ"} : () -> !tile.tensor<f16, "shared", "(1,256):(1,1)">
  %5 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %6 = "tile.local_tile"(%0, %5) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
  "tile.copy"(%6, %3) {atom = "cp_async.cg.16"} : (!tile.tensor<f16, "global", "(1,256):(?,1)">, !tile.tensor<f16, "shared", "(1,256):(1,1)">) -> ()
  %7 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %8 = "tile.local_tile"(%2, %7) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
  "tile.copy"(%8, %4) {atom = "cp_async.cg.16"} : (!tile.tensor<f16, "global", "(1,256):(?,1)">, !tile.tensor<f16, "shared", "(1,256):(1,1)">) -> ()
  %9 = "tile.load"(%3) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "shared", "(1,256):(1,1)">) -> !tile.tensor<f16, "register", "(1,256):(1,1)">
  %10 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %11 = "tile.local_tile"(%1, %10) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
  "tile.store"(%9, %11) : (!tile.tensor<f16, "register", "(1,256):(1,1)">, !tile.tensor<f16, "global", "(1,256):(?,1)">) -> ()
  %12 = "tile.load"(%4) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "shared", "(1,256):(1,1)">) -> !tile.tensor<f16, "register", "(1,256):(1,1)">
  %13 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %14 = "tile.local_tile"(%2, %13) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
  "tile.store"(%12, %14) : (!tile.tensor<f16, "register", "(1,256):(1,1)">, !tile.tensor<f16, "global", "(1,256):(?,1)">) -> ()
  return
}

// -----

// A copy tile-pipeline pipelined is its ring's to wait for: left alone.
// CHECK-LABEL: func.func @pipelined(
// CHECK-NOT:   "tile.async_
// CHECK:       return
func.func @pipelined(%arg0: !llvm.ptr, %arg1: index, %arg2: index) attributes {tile.kernel, tile.threads = array<i64: 32, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg2, %arg2) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.alloc_shared"() {name = "sX"} : () -> !tile.tensor<f16, "shared", "(1,256):(1,1)">
  %2 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %3 = "tile.local_tile"(%0, %2) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
  "tile.copy"(%3, %1) {atom = "cp_async.cg.16", tile.pipelined} : (!tile.tensor<f16, "global", "(1,256):(?,1)">, !tile.tensor<f16, "shared", "(1,256):(1,1)">) -> ()
  %4 = "tile.load"(%1) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "shared", "(1,256):(1,1)">) -> !tile.tensor<f16, "register", "(1,256):(1,1)">
  return
}
