// tile-ring: a warp-specialised kernel's pipelined loops on an S-stage mbarrier ring. One
// shared array holds every TMA-filled buffer's slot per stage (1024-byte aligned), the TMA-store
// epilogue's chunks and the full/empty barriers; the producer's loop acquires a stage and its
// copy<tma>s become cp.async.bulk.tensor loads completing on the stage's full barrier (arming it
// with the boxes' bytes); the consumers' loop waits on the full barrier, its gemm reads the
// stage's slots (view casts) and it releases the stage before, and the last one after the loop.
// Negative cases: tile-ring.mlir.bad.
// RUN: tile-opt -p tile-ring --split-input-file %s | filecheck %s
// RUN: tile-opt -p "tile-ring{epilogue=direct}" %s | filecheck %s --check-prefix=DIRECT
// RUN: tile-opt -p tile-ring --split-input-file --verify-diagnostics %s.bad
// RUN: not tile-opt -p "tile-ring{epilogue=smem}" %s 2>&1 | filecheck %s --check-prefix=OPTION

// OPTION: error: epilogue must be tma or direct, got 'smem'

// Two stages of a 128x64 A and a 64x64 B tile (f16, 128-byte swizzle): 24576 bytes a stage.
// One producer warp group, two consumers splitting the 128x64 accumulator, f16 output stored
// through TMA.
// One shared array: 2 stages x 24576, the epilogue's 2 consumer groups x 2 chunks x 8192,
// 2 x 2 barriers of 8 bytes, 1024 bytes to align the base: 49152 + 32768 + 32 + 1024.
// CHECK: llvm.mlir.global internal @__smem_ring_ring() {{.*}} : !llvm.array<82976 x i8>
// DIRECT: llvm.mlir.global internal @__smem_ring_ring() {{.*}} : !llvm.array<50208 x i8>
// The output's map (optional: null where C's rows are not 16-byte multiples) comes first,
// then A's and B's, each a trailing !llvm.ptr argument in the order of `tile.tma`.
// CHECK-LABEL: func.func @ring(
// CHECK-SAME: %arg6: index, %arg7: !llvm.ptr, %arg8: !llvm.ptr, %arg9: !llvm.ptr) attributes {
// CHECK-SAME: tile.ring_stages = 2 : i64
// CHECK-SAME: tile.tma = [{box = array<i64: 64, 64>, name = "tma_C", optional, swizzle = "128B", tensor = "C"}, {box = array<i64: 128, 64>, name = "tma_A", swizzle = "128B", tensor = "A"}, {box = array<i64: 64, 64>, name = "tma_B", swizzle = "128B", tensor = "B"}]}
// DIRECT-LABEL: func.func @ring(
// DIRECT-SAME: %arg6: index, %arg7: !llvm.ptr, %arg8: !llvm.ptr) attributes {
// DIRECT-SAME: tile.tma = [{box = array<i64: 128, 64>, name = "tma_A", swizzle = "128B", tensor = "A"}, {box = array<i64: 64, 64>, name = "tma_B", swizzle = "128B", tensor = "B"}]}
// Full barriers after the 2 x 24576 stages and 32768 epilogue bytes, empty ones 16 bytes on;
// thread 0 sets them up (1 arrival + tx bytes for full, the 256 consumer threads for empty).
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[BASE:.*]] = llvm.getelementptr
// CHECK: %[[C81920:.*]] = arith.constant 81920 : index
// CHECK: %[[FULL:.*]] = llvm.getelementptr %[[BASE]]
// CHECK: %[[C81936:.*]] = arith.constant 81936 : index
// CHECK: %[[EMPTY:.*]] = llvm.getelementptr %[[BASE]]
// CHECK: scf.if
// CHECK: nvvm.mbarrier.init %[[FULL]], %[[ONE:.*]] :
// CHECK-NEXT: nvvm.mbarrier.init %[[EMPTY]], %[[ARRIVALS:.*]] :
// CHECK: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier
// CHECK: llvm.getelementptr %[[BASE]][{{.*}}] {tile.epilogue_chunks}
// The producer: wait for the empty barrier with the flipped parity, arm the full one with
// the stage's 24576 bytes, load A's box into the stage's slot and B's 16384 bytes on.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: %[[BYTES:.*]] = arith.constant 24576 : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[ARMED:.*]], %[[BYTES]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}, %arg8, %[[ARMED]], box
// CHECK: arith.constant 16384 : index
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}, %arg9, %[[ARMED]], box
// CHECK-NOT: "tile.copy"
// CHECK: } {tile.stages = 2 : i64}
// CHECK: tile.role = "producer"
// The consumers: wait on the full barrier, read the stage's slots, release the stage before.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: builtin.unrealized_conversion_cast {{.*}} to !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)"> {tile.view = {bounds = "[]", offset = "0", shape = "[128,64]", span = 8192 : i64, stride = "[64,1]", swizzle = "[3,3,3]"}}
// CHECK: builtin.unrealized_conversion_cast {{.*}} to !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
// CHECK: "tile.gemm"
// CHECK-NEXT: scf.if
// CHECK: nvvm.mbarrier.arrive
// CHECK: } {tile.stages = 2 : i64}
// CHECK: scf.if
// CHECK: nvvm.mbarrier.arrive
// CHECK: "tile.store"({{.*}}) {tile.tma_store = 7 : i64}
// CHECK: tile.role = "consumer"
// DIRECT: "tile.store"({{.*}}) :
// CHECK: } {tile.ring, tile.warp_specialize}
func.func @ring(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr, %m: index, %n: index, %k: index, %kt: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  %A = "tile.make_tensor"(%a, %m, %k, %k) {name = "A"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %B = "tile.make_tensor"(%b, %n, %k, %k) {name = "B"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %C = "tile.make_tensor"(%c, %m, %n, %n) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %sA = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %sB = "tile.alloc_shared"() {name = "sB"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %mma = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.execute_region {
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      scf.for %i = %c0 to %kt step %c1 {
        %ta = "tile.local_tile"(%A, %bx, %i) {coord = "(?,?)", tile = array<i64: 128, 64>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(128,64):(?,1)">
        "tile.copy"(%ta, %sA) {atom = "tma"} : (!tile.tensor<f16, "global", "(128,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
        %tb = "tile.local_tile"(%B, %c0, %i) {coord = "(?,?)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
        "tile.copy"(%tb, %sB) {atom = "tma"} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
      } {tile.stages = 2 : i64}
      scf.yield
    } {tile.registers = 40 : i64, tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %acc = "tile.fragment"(%mma) {block_shape = array<i64: 128, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">
      "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      scf.for %i = %c0 to %kt step %c1 {
        "tile.gemm"(%mma, %sA, %sB, %acc) : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      } {tile.stages = 2 : i64}
      %tc = "tile.local_tile"(%C, %bx, %c0) {coord = "(?,?)", tile = array<i64: 128, 64>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(128,64):(?,1)">
      "tile.store"(%acc, %tc) : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">, !tile.tensor<f16, "global", "(128,64):(?,1)">) -> ()
      scf.yield
    } {tile.registers = 232 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  return
}
