// tile-ring's once ring: a copy<tma> outside the pipelined loops (attention's Q tile, loaded
// once a tile) takes a slot of its own after the ring's stages, with its own full and empty
// barriers after the stage ring's; the producer acquires it before its loop, the consumers
// wait for it before their pipelined loop and release it after. Two gemms read each stage (S
// from K, P V from V): the stage is waited for and the stage before released with the first
// one only; the second reads the permutation of V's slot (MN-major). Negative cases:
// tile-ring-once.mlir.bad.
// RUN: tile-opt -p tile-ring --split-input-file %s | filecheck %s
// RUN: tile-opt -p tile-ring --split-input-file --verify-diagnostics %s.bad

// Stages: 2 x (sK 8192 + sV 8192); the once ring: sQ 16384; barriers: 2 + 2 stage ones and
// 1 + 1 once ones of 8 bytes; 1024 bytes to align the base: 32768 + 16384 + 48 + 1024.
// CHECK: llvm.mlir.global internal @__smem_once_ring() {{.*}} : !llvm.array<50224 x i8>
// CHECK-LABEL: func.func @once(
// CHECK-SAME: tile.ring_stages = 2 : i64
// CHECK-SAME: tile.tma = [{box = array<i64: 128, 64>, name = "tma_Q", swizzle = "128B", tensor = "Q"}, {box = array<i64: 64, 64>, name = "tma_K", swizzle = "128B", tensor = "K"}, {box = array<i64: 64, 64>, name = "tma_V", swizzle = "128B", tensor = "V"}]}
// CHECK: %[[BASE:.*]] = llvm.getelementptr
// CHECK: arith.constant 49152 : index
// CHECK: %[[FULL:.*]] = llvm.getelementptr %[[BASE]]
// CHECK: arith.constant 49168 : index
// CHECK: %[[EMPTY:.*]] = llvm.getelementptr %[[BASE]]
// CHECK: arith.constant 49184 : index
// CHECK: %[[QFULL:.*]] = llvm.getelementptr %[[BASE]]
// CHECK: arith.constant 49192 : index
// CHECK: %[[QEMPTY:.*]] = llvm.getelementptr %[[BASE]]
// CHECK: scf.if
// CHECK: nvvm.mbarrier.init %[[FULL]], %[[ONE:.*]] :
// CHECK-NEXT: nvvm.mbarrier.init %[[EMPTY]], %[[ARRIVALS:.*]] :
// CHECK: nvvm.mbarrier.init %[[QFULL]], %{{.*}} :
// CHECK-NEXT: nvvm.mbarrier.init %[[QEMPTY]], %{{.*}} :
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier
// The producer: Q's slot (32768 on) acquired with its 16384 bytes before the loop (turn 0:
// parity 0, the empty barrier waited at parity 1), then the loop's stages as usual.
// CHECK: %[[Z:.*]] = arith.index_cast %c0{{.*}} : index to i32
// CHECK: %[[FLIP:.*]] = arith.xori %[[Z]], %c1_i32
// CHECK: nvvm.mbarrier.try_wait.parity %[[QEMPTY]], %[[FLIP]]
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[QFULL]], %c16384_i32
// CHECK: arith.constant 32768 : index
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}, %arg7, %[[QFULL]], box
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}, %arg8,
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}, %arg9,
// CHECK: } {tile.stages = 2 : i64}
// CHECK: tile.role = "producer"
// The consumers: Q's full barrier waited for before the loop; in it, the stage's, then the
// first gemm reads Q's slot and K's, the stage before is released right after it; the second
// gemm (A in registers) reads V's slot permuted, and releases nothing.
// CHECK: nvvm.mbarrier.try_wait.parity %[[QFULL]]
// CHECK-NEXT: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: arith.constant 32768 : index
// CHECK: builtin.unrealized_conversion_cast {{.*}} to !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)"> {tile.view = {bounds = "[]", offset = "0", shape = "[128,64]", span = 8192 : i64, stride = "[64,1]", swizzle = "[3,3,3]"}}
// CHECK: builtin.unrealized_conversion_cast {{.*}} to !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
// CHECK-NOT: nvvm.mbarrier
// CHECK: "tile.gemm"
// CHECK-NEXT: scf.if
// CHECK: nvvm.mbarrier.arrive
// CHECK: "tile.convert"
// CHECK-NOT: nvvm.mbarrier
// CHECK: arith.constant 8192 : index
// CHECK: builtin.unrealized_conversion_cast {{.*}} to !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(1,64)"> {tile.view = {bounds = "[]", offset = "0", shape = "[64,64]", span = 4096 : i64, stride = "[1,64]", swizzle = "[3,3,3]"}}
// CHECK-NEXT: "tile.gemm"
// CHECK-NOT: nvvm.mbarrier
// CHECK: } {tile.stages = 2 : i64}
// After the loop: the last stage released if the loop ran, then Q's slot.
// CHECK: scf.if
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.mbarrier.arrive %[[QEMPTY]]
// CHECK-NOT: tile.permute
// CHECK: tile.role = "consumer"
func.func @once(%q: !llvm.ptr, %k: !llvm.ptr, %v: !llvm.ptr, %o: !llvm.ptr, %m: index, %n: index, %kt: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %Q = "tile.make_tensor"(%q, %m, %c64, %c64) {name = "Q"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %K = "tile.make_tensor"(%k, %n, %c64, %c64) {name = "K"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %V = "tile.make_tensor"(%v, %n, %c64, %c64) {name = "V"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %O = "tile.make_tensor"(%o, %m, %c64, %c64) {name = "O"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,64):(?,1)">
  %sQ = "tile.alloc_shared"() {name = "sQ"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %sK = "tile.alloc_shared"() {name = "sK"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %sV = "tile.alloc_shared"() {name = "sV"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %qk = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">
  %pv = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">
  scf.execute_region {
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %tq = "tile.local_tile"(%Q, %bx) {coord = "(?,0)", tile = array<i64: 128, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(128,64):(?,1)">
      "tile.copy"(%tq, %sQ) {atom = "tma"} : (!tile.tensor<f16, "global", "(128,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
      scf.for %j = %c0 to %kt step %c1 {
        %tk = "tile.local_tile"(%K, %j) {coord = "(?,0)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
        "tile.copy"(%tk, %sK) {atom = "tma"} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
        %tv = "tile.local_tile"(%V, %j) {coord = "(?,0)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
        "tile.copy"(%tv, %sV) {atom = "tma"} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
      } {tile.stages = 2 : i64}
      scf.yield
    } {tile.registers = 40 : i64, tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %acc = "tile.fragment"(%pv) {block_shape = array<i64: 128, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">
      "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      scf.for %j = %c0 to %kt step %c1 {
        %s = "tile.fragment"(%qk) {block_shape = array<i64: 128, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">
        "tile.fill"(%s) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
        "tile.gemm"(%qk, %sQ, %sK, %s) : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
        %p = "tile.convert"(%s) : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> !tile.tensor<f16, "register", "(32,1,1):(1,32,32)">
        %vt = "tile.permute"(%sV) {perm = array<i64: 1, 0>} : (!tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(1,64)">
        "tile.gemm"(%pv, %p, %vt, %acc) : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">, !tile.tensor<f16, "register", "(32,1,1):(1,32,32)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(1,64)">, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      } {tile.stages = 2 : i64}
      %to = "tile.local_tile"(%O, %bx) {coord = "(?,0)", tile = array<i64: 128, 64>} : (!tile.tensor<f32, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f32, "global", "(128,64):(?,1)">
      "tile.store"(%acc, %to) : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">, !tile.tensor<f32, "global", "(128,64):(?,1)">) -> ()
      scf.yield
    } {tile.registers = 232 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  return
}

// -----

// The consumers split the producer's iterations into two loops (attention's unmasked tiles,
// then the diagonal ones): the second loop's iteration i is the ring's max(ka, 0) + i; Q's
// slot is waited for before the first loop and released after the second, not between.
// CHECK-LABEL: func.func @siblings(
// CHECK: nvvm.mbarrier.init %[[QFULL:[^,]*]], %c1_i32_{{[0-9]+}} :
// CHECK-NEXT: nvvm.mbarrier.init %[[QEMPTY:[^,]*]], %c128_i32_{{[0-9]+}} :
// CHECK: tile.role = "producer"
// CHECK: nvvm.mbarrier.try_wait.parity %[[QFULL]],
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %arg5 step
// CHECK: "tile.gemm"
// CHECK: } {tile.stages = 2 : i64}
// CHECK-NOT: nvvm.mbarrier.arrive %[[QEMPTY]]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[D1:.*]] = arith.subi %arg5, %c0
// CHECK: %[[T1:.*]] = arith.maxsi %[[D1]], %c0
// CHECK-NEXT: %[[N:.*]] = arith.addi %[[T1]], %{{.*}} : index
// CHECK: arith.andi %[[N]], %c1
// CHECK: "tile.gemm"
// CHECK: } {tile.stages = 2 : i64}
// CHECK: nvvm.mbarrier.arrive %[[QEMPTY]]
// CHECK-NEXT: scf.yield
// CHECK: tile.role = "consumer"
func.func @siblings(%q: !llvm.ptr, %k: !llvm.ptr, %m: index, %n: index, %kt: index, %ka: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 256, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %Q = "tile.make_tensor"(%q, %m, %c64, %c64) {name = "Q"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %K = "tile.make_tensor"(%k, %n, %c64, %c64) {name = "K"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %sQ = "tile.alloc_shared"() {name = "sQ"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %sK = "tile.alloc_shared"() {name = "sK"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %qk = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(1,1,1)">
  %acc = "tile.fragment"(%qk) {block_shape = array<i64: 64, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(1,1,1)">) -> !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">
  scf.execute_region {
    scf.execute_region {
      %tq = "tile.local_tile"(%Q, %c0) {coord = "(?,0)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
      "tile.copy"(%tq, %sQ) {atom = "tma"} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
      scf.for %j = %c0 to %kt step %c1 {
        %tk = "tile.local_tile"(%K, %j) {coord = "(?,0)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
        "tile.copy"(%tk, %sK) {atom = "tma"} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
      } {tile.stages = 2 : i64}
      scf.yield
    } {tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      scf.for %j = %c0 to %ka step %c1 {
        "tile.gemm"(%qk, %sQ, %sK, %acc) : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(1,1,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      } {tile.stages = 2 : i64}
      %rest = arith.subi %kt, %ka : index
      scf.for %i = %c0 to %rest step %c1 {
        "tile.gemm"(%qk, %sQ, %sK, %acc) : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(1,1,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      } {tile.stages = 2 : i64}
      scf.yield
    } {tile.role = "consumer", tile.warpgroups = array<i64: 1>}
    scf.yield
  } {tile.warp_specialize}
  return
}
