// tile-ring with copy<tma> of a tile of a window (a packed sequence's rows, the source's
// `K[k0 .. k0 + n - 1, kv, _]`): the tensor map still spans the whole tensor, and the box's
// coordinate along the cut mode is the window's first row plus the tile's; the copy must say
// `tile.unbounded` (the source's `unbounded = 1`: its box reads past the window's end), else a
// located error (tile-ring-windows.mlir.bad). A 16-bit output tile of a window is stored from
// registers, never by a TMA store (which would write past the window up to the tensor's end).
// RUN: tile-opt -p tile-ring --split-input-file %s | filecheck %s
// RUN: tile-opt -p tile-ring --split-input-file --verify-diagnostics %s.bad

// Q (TQ, H, 64) cut to rows q0 .. q1 of head h: one box (128, 1, 64), at (0, h, q0 + 128 bx)
// innermost first. K (TK, 64) cut to rows k0 .. k1: boxes (64, 64) at (0, k0 + 64 j). No map
// for O (its tile is a window's): only Q's and K's.
// CHECK-LABEL: func.func @packed(
// CHECK-SAME: %arg8: index, %arg9: index, %arg10: index, %arg11: index, %arg12: index, %arg13: !llvm.ptr, %arg14: !llvm.ptr) attributes {
// CHECK-SAME: tile.tma = [{box = array<i64: 128, 1, 64>, name = "tma_Q", swizzle = "128B", tensor = "Q"}, {box = array<i64: 64, 64>, name = "tma_K", swizzle = "128B", tensor = "K"}]}
// The producer: Q's box at (0, h, q0 + 128 bx), innermost first (q0 is %arg8, h %arg12).
// CHECK: %[[BX:.*]] = "tile.block_id"
// CHECK: %[[ROW:.*]] = arith.shli %[[BX]], %c7
// CHECK-NEXT: %[[QROW:.*]] = arith.addi %[[ROW]], %arg8 : index
// CHECK: %[[QH:.*]] = arith.index_cast %arg12 : index to i32
// CHECK-NEXT: %[[QR:.*]] = arith.index_cast %[[QROW]] : index to i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg13, %{{.*}}, box[%{{.*}}, %[[QH]], %[[QR]]]
// K's box at (0, k0 + 64 j) (k0 is %arg10).
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %arg7
// CHECK: %[[KROW:.*]] = arith.shli %[[J]], %c6
// CHECK-NEXT: %[[KR:.*]] = arith.addi %[[KROW]], %arg10 : index
// CHECK: %[[KRI:.*]] = arith.index_cast %[[KR]] : index to i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg14, %{{.*}}, box[%{{.*}}, %[[KRI]]]
// CHECK: } {tile.stages = 2 : i64}
// CHECK: tile.role = "producer"
// The consumers' store of O's window: from registers (no tensor map named on it).
// CHECK-NOT: tile.tma_store
// CHECK: "tile.store"
// CHECK-NOT: tile.tma_store
// CHECK: tile.role = "consumer"
func.func @packed(%q: !llvm.ptr, %k: !llvm.ptr, %o: !llvm.ptr, %tq: index, %heads: index, %tk: index, %sqt: index, %kt: index, %q0: index, %q1: index, %k0: index, %k1: index, %h: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %Q = "tile.make_tensor"(%q, %tq, %heads, %sqt, %c64) {name = "Q"} : (!llvm.ptr, index, index, index, index) -> !tile.tensor<f16, "global", "(?,?,64):(?,64,1)">
  %K = "tile.make_tensor"(%k, %tk, %c64) {name = "K"} : (!llvm.ptr, index, index) -> !tile.tensor<f16, "global", "(?,64):(64,1)">
  %O = "tile.make_tensor"(%o, %tq, %c64) {name = "O"} : (!llvm.ptr, index, index) -> !tile.tensor<f16, "global", "(?,64):(64,1)">
  %sQ = "tile.alloc_shared"() {name = "sQ"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %sK = "tile.alloc_shared"() {name = "sK"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %qk = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">
  %Qw = "tile.window"(%Q, %q0, %q1) {window = "(?..?,_,_)"} : (!tile.tensor<f16, "global", "(?,?,64):(?,64,1)">, index, index) -> !tile.tensor<f16, "global", "(?,?,64):(?,64,1)">
  %Qb = "tile.slice"(%Qw, %h) {coord = "(_,?,_)"} : (!tile.tensor<f16, "global", "(?,?,64):(?,64,1)">, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %Kb = "tile.window"(%K, %k0, %k1) {window = "(?..?,_)"} : (!tile.tensor<f16, "global", "(?,64):(64,1)">, index, index) -> !tile.tensor<f16, "global", "(?,64):(64,1)">
  scf.execute_region {
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %tq0 = "tile.local_tile"(%Qb, %bx) {coord = "(?,0)", tile = array<i64: 128, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(128,64):(?,1)">
      "tile.copy"(%tq0, %sQ) {atom = "tma", tile.unbounded} : (!tile.tensor<f16, "global", "(128,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
      scf.for %j = %c0 to %kt step %c1 {
        %tk0 = "tile.local_tile"(%Kb, %j) {coord = "(?,0)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,64):(64,1)">, index) -> !tile.tensor<f16, "global", "(64,64):(64,1)">
        "tile.copy"(%tk0, %sK) {atom = "tma", tile.unbounded} : (!tile.tensor<f16, "global", "(64,64):(64,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
      } {tile.stages = 2 : i64}
      scf.yield
    } {tile.registers = 40 : i64, tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %s = "tile.fragment"(%qk) {block_shape = array<i64: 128, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">
      "tile.fill"(%s) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      scf.for %j = %c0 to %kt step %c1 {
        "tile.gemm"(%qk, %sQ, %sK, %s) : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      } {tile.stages = 2 : i64}
      %Ow = "tile.window"(%O, %q0, %q1) {window = "(?..?,_)"} : (!tile.tensor<f16, "global", "(?,64):(64,1)">, index, index) -> !tile.tensor<f16, "global", "(?,64):(64,1)">
      %to = "tile.local_tile"(%Ow, %bx) {coord = "(?,0)", tile = array<i64: 128, 64>} : (!tile.tensor<f16, "global", "(?,64):(64,1)">, index) -> !tile.tensor<f16, "global", "(128,64):(64,1)">
      "tile.store"(%s, %to) : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">, !tile.tensor<f16, "global", "(128,64):(64,1)">) -> ()
      scf.yield
    } {tile.registers = 232 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  return
}
