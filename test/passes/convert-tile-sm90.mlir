// convert-tile-sm90: a warp-specialised kernel as one if/else chain on the warp group
// (setmaxnreg first in each branch), TMA loads on an S-stage mbarrier ring, wgmma with the
// accumulator carried as iter_args, and the tensor maps as trailing !llvm.ptr arguments that
// `tile.tma` describes. Negative cases: convert-tile-sm90.mlir.bad.
// RUN: tile-opt -p convert-tile-sm90 --split-input-file %s | filecheck %s
// RUN: tile-opt -p "convert-tile-sm90{epilogue=direct}" --split-input-file %s | filecheck %s --check-prefix=DIRECT
// RUN: tile-opt -p convert-tile-sm90 --split-input-file --verify-diagnostics %s.bad
// RUN: not tile-opt -p "convert-tile-sm90{epilogue=smem}" %s 2>&1 | filecheck %s --check-prefix=OPTION

// OPTION: error: epilogue must be tma or direct, got 'smem'

// Two stages of a 128x64 A and a 64x64 B tile (f16, 128-byte swizzle): 24576 bytes a stage.
// One producer warp group, two consumers (tiling (2,1,1): 64 rows of the 128x64 accumulator
// each, one 64x64x16 wgmma per k-step), f16 output stored through TMA.
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

// One shared array: 2 stages x 24576, the epilogue's 2 consumer groups x 2 chunks x 8192,
// 2 x 2 barriers of 8 bytes, 1024 bytes to align the base: 49152 + 32768 + 32 + 1024.
// CHECK: llvm.mlir.global internal @__smem_ring_ring() {{.*}} : !llvm.array<82976 x i8>
// The output's map (optional: null where C's rows are not 16-byte multiples) comes first,
// then A's and B's, each a trailing !llvm.ptr argument in the order of `tile.tma`.
// CHECK-LABEL: func.func @ring(
// CHECK-SAME: %arg6: index, %arg7: !llvm.ptr, %arg8: !llvm.ptr, %arg9: !llvm.ptr) attributes {
// CHECK-SAME: tile.tma = [{box = array<i64: 64, 64>, name = "tma_C", optional, swizzle = "128B", tensor = "C"}, {box = array<i64: 128, 64>, name = "tma_A", swizzle = "128B", tensor = "A"}, {box = array<i64: 64, 64>, name = "tma_B", swizzle = "128B", tensor = "B"}]}
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[SEVEN:.*]] = arith.constant 7 : index
// CHECK-NEXT: %[[WG:.*]] = arith.shrui %[[TID]], %[[SEVEN]] : index
// The full barriers after the stages and the epilogue's chunks, the empty ones 2 x 8 bytes on.
// CHECK: %[[BASE:.*]] = llvm.getelementptr %{{.*}} : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
// CHECK-NEXT: %[[AT_FULL:.*]] = arith.constant 81920 : index
// CHECK-NEXT: %[[I:.*]] = arith.index_cast %[[AT_FULL]] : index to i64
// CHECK-NEXT: %[[FULL:.*]] = llvm.getelementptr %[[BASE]][%[[I]]]
// CHECK-NEXT: %[[AT_EMPTY:.*]] = arith.constant 81936 : index
// CHECK-NEXT: %[[I:.*]] = arith.index_cast %[[AT_EMPTY]] : index to i64
// CHECK-NEXT: %[[EMPTY:.*]] = llvm.getelementptr %[[BASE]][%[[I]]]
// Thread 0 initialises them: a full barrier waits for the producer's one arrival (plus the
// bytes), an empty one for every consumer thread (2 warp groups = 256).
// CHECK: scf.if
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[CONSUMERS:.*]] = arith.constant 256 : i32
// CHECK-NEXT: nvvm.mbarrier.init %[[FULL]], %[[ONE]]
// CHECK-NEXT: nvvm.mbarrier.init %[[EMPTY]], %[[CONSUMERS]]
// CHECK: %[[FULL1:.*]] = llvm.getelementptr %[[FULL]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: nvvm.mbarrier.init %[[FULL1]], %[[ONE]]
// CHECK: %[[EMPTY1:.*]] = llvm.getelementptr %[[EMPTY]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: nvvm.mbarrier.init %[[EMPTY1]], %[[CONSUMERS]]
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK-NOT: nvvm.mbarrier.init
// CHECK: gpu.barrier
// The producer: warp group 0, 40 registers, its body on thread 0 of the group.
// CHECK: %[[LANE:.*]] = arith.andi %[[TID]], %{{.*}} : index
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[LEADER:.*]] = arith.cmpi eq, %[[LANE]], %[[ZERO]] : index
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[IS_PRODUCER:.*]] = arith.cmpi eq, %[[WG]], %[[ZERO]] : index
// CHECK-NEXT: scf.if %[[IS_PRODUCER]] {
// CHECK-NEXT: scf.execute_region {
// CHECK-NEXT: nvvm.setmaxregister decrease 40
// CHECK-NEXT: scf.if %[[LEADER]] {
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// Iteration i is stage i mod 2 of turn i div 2 (powers of two: and, shift); the producer
// waits for the empty barrier's parity of the turn before (xor 1), so its first turn passes.
// CHECK: %[[IT:.*]] = arith.subi %[[K]], %{{.*}} : index
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[STAGE:.*]] = arith.andi %[[IT]], %[[TWO]] : index
// CHECK-NEXT: %[[SHIFT:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[TURN:.*]] = arith.shrui %[[IT]], %[[SHIFT]] : index
// CHECK-NEXT: %[[ODD:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[PARITY:.*]] = arith.andi %[[TURN]], %[[ODD]] : index
// CHECK-NEXT: %[[PARITY32:.*]] = arith.index_cast %[[PARITY]] : index to i32
// CHECK-NEXT: %[[FLIP:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[BEFORE:.*]] = arith.xori %[[PARITY32]], %[[FLIP]] : i32
// CHECK: %[[E:.*]] = llvm.getelementptr %[[EMPTY]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: nvvm.mbarrier.try_wait.parity %[[E]], %[[BEFORE]], %{{.*}} : !llvm.ptr<3>, i32, i32
// The stage's full barrier expects both tiles' bytes, 16384 + 8192, and completes on them.
// CHECK: %[[F:.*]] = llvm.getelementptr %[[FULL]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: %[[TX:.*]] = arith.constant 24576 : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[F]], %[[TX]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg8, %[[F]], box[%{{.*}}, %{{.*}}]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg9, %[[F]], box[%{{.*}}, %{{.*}}]
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: } {tile.stages = 2 : i64}
// The consumers: warp groups 1 and 2, 232 registers, in the else branch.
// CHECK: } else {
// CHECK: %[[IS1:.*]] = arith.cmpi eq, %[[WG]], %{{.*}} : index
// CHECK: %[[IS2:.*]] = arith.cmpi eq, %[[WG]], %{{.*}} : index
// CHECK-NEXT: %[[IS_CONSUMER:.*]] = arith.ori %[[IS1]], %[[IS2]] : i1
// CHECK-NEXT: scf.if %[[IS_CONSUMER]] {
// CHECK-NEXT: scf.execute_region {
// CHECK-NEXT: nvvm.setmaxregister increase 232
// The accumulator (32 f32 a thread) is the loop's iter_arg; each iteration waits for its
// stage's full barrier at the turn's own parity.
// CHECK: %[[OUT:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (!llvm.struct<(f32, {{.*}})>) {
// CHECK: %[[IT:.*]] = arith.subi %[[K]], %{{.*}} : index
// CHECK: %[[PARITY:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[FB:.*]] = llvm.getelementptr %[[FULL]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: nvvm.mbarrier.try_wait.parity %[[FB]], %[[PARITY]], %{{.*}} : !llvm.ptr<3>, i32, i32
// BK / 16 = 4 k-steps x 1 wgmma tile per group, one commit group, one group left in flight.
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[W0:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[ACC]], <m = 64, n = 64, k = 16>
// CHECK: %[[W1:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[W0]], <m = 64, n = 64, k = 16>
// CHECK: %[[W2:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[W1]], <m = 64, n = 64, k = 16>
// CHECK: %[[W3:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[W2]], <m = 64, n = 64, k = 16>
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// From the second iteration on, the group before has finished reading its stage: release it.
// CHECK: %[[LATER:.*]] = arith.cmpi ugt, %{{.*}}, %{{.*}} : index
// CHECK: %[[PREV:.*]] = arith.subi %[[IT]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[LATER]] {
// CHECK: %[[PS:.*]] = arith.andi %[[PREV]], %{{.*}} : index
// CHECK: %[[EB:.*]] = llvm.getelementptr %[[EMPTY]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: nvvm.mbarrier.arrive %[[EB]]
// CHECK: scf.yield %[[W3]] : !llvm.struct
// CHECK-NEXT: } {tile.stages = 2 : i64}
// After the loop: wait for the last group, release the last stage (if the loop ran).
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: %[[RAN:.*]] = arith.cmpi sgt, %{{.*}}, %{{.*}} : index
// CHECK: scf.if %[[RAN]] {
// CHECK: %[[EL:.*]] = llvm.getelementptr %[[EMPTY]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: nvvm.mbarrier.arrive %[[EL]]
// The epilogue reads the loop's result and stores through C's map, unless the runtime gave none.
// CHECK: llvm.extractvalue %[[OUT]][0]
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %arg7, %{{.*}}, box[%{{.*}}, %{{.*}}]
// CHECK: nvvm.cp.async.bulk.wait_group 0

// With epilogue=direct, C is stored from registers: no map for it, no third argument.
// DIRECT-LABEL: func.func @ring(
// DIRECT-SAME: %arg6: index, %arg7: !llvm.ptr, %arg8: !llvm.ptr) attributes {
// DIRECT-SAME: tile.tma = [{box = array<i64: 128, 64>, name = "tma_A", swizzle = "128B", tensor = "A"}, {box = array<i64: 64, 64>, name = "tma_B", swizzle = "128B", tensor = "B"}]}
// DIRECT: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg7,
// DIRECT: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg8,
// DIRECT-NOT: nvvm.cp.async.bulk.tensor.global.shared.cta
// DIRECT: llvm.store

// -----

// Three stages, persistent: a ring that gets shallower must fail here. bf16 128x64 tiles for
// both operands (32768 bytes a stage); a 128x128 accumulator of two 64x64 wgmma tiles per
// consumer group; an f32 output, which the epilogue stores from registers (no map for C).
func.func @deep(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr, %tiles: index, %k: index, %kt: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  %A = "tile.make_tensor"(%a, %k, %k, %k) {name = "A"} : (!llvm.ptr, index, index, index) -> !tile.tensor<bf16, "global", "(?,?):(?,1)">
  %B = "tile.make_tensor"(%b, %k, %k, %k) {name = "B"} : (!llvm.ptr, index, index, index) -> !tile.tensor<bf16, "global", "(?,?):(?,1)">
  %C = "tile.make_tensor"(%c, %k, %k, %k) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %sA = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %sB = "tile.alloc_shared"() {name = "sB"} : () -> !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %mma = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.bf16.bf16", "(2,1,1)">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.execute_region {
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %gx = "tile.grid_dim"() {dim = 0 : i64} : () -> index
      scf.for %t = %bx to %tiles step %gx {
        scf.for %i = %c0 to %kt step %c1 {
          %ta = "tile.local_tile"(%A, %t, %i) {coord = "(?,?)", tile = array<i64: 128, 64>} : (!tile.tensor<bf16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<bf16, "global", "(128,64):(?,1)">
          "tile.copy"(%ta, %sA) {atom = "tma"} : (!tile.tensor<bf16, "global", "(128,64):(?,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
          %tb = "tile.local_tile"(%B, %t, %i) {coord = "(?,?)", tile = array<i64: 128, 64>} : (!tile.tensor<bf16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<bf16, "global", "(128,64):(?,1)">
          "tile.copy"(%tb, %sB) {atom = "tma"} : (!tile.tensor<bf16, "global", "(128,64):(?,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
        } {tile.stages = 3 : i64}
      } {tile.persistent = "linear"}
      scf.yield
    } {tile.registers = 40 : i64, tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %gx = "tile.grid_dim"() {dim = 0 : i64} : () -> index
      scf.for %t = %bx to %tiles step %gx {
        %acc = "tile.fragment"(%mma) {block_shape = array<i64: 128, 128>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.bf16.bf16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,2):(1,32,32)">
        "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,2):(1,32,32)">) -> ()
        scf.for %i = %c0 to %kt step %c1 {
          "tile.gemm"(%mma, %sA, %sB, %acc) : (!tile.mma<"sm90.wgmma_64x64x16.f32.bf16.bf16", "(2,1,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,2):(1,32,32)">) -> ()
        } {tile.stages = 3 : i64}
        %tc = "tile.local_tile"(%C, %t, %t) {coord = "(?,?)", tile = array<i64: 128, 128>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(128,128):(?,1)">
        "tile.store"(%acc, %tc) : (!tile.tensor<f32, "register", "(32,1,2):(1,32,32)">, !tile.tensor<f32, "global", "(128,128):(?,1)">) -> ()
      } {tile.persistent = "linear"}
      scf.yield
    } {tile.registers = 232 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  return
}

// 3 x 32768 bytes of stages, 3 + 3 barriers, no epilogue chunks (f32 output): 98304 + 48 + 1024.
// CHECK: llvm.mlir.global internal @__smem_deep_ring() {{.*}} : !llvm.array<99376 x i8>
// CHECK-LABEL: func.func @deep(
// CHECK-SAME: %arg5: index, %arg6: !llvm.ptr, %arg7: !llvm.ptr) attributes {
// CHECK-SAME: tile.tma = [{box = array<i64: 128, 64>, name = "tma_A", swizzle = "128B", tensor = "A"}, {box = array<i64: 128, 64>, name = "tma_B", swizzle = "128B", tensor = "B"}]}
// CHECK: %[[AT_FULL:.*]] = arith.constant 98304 : index
// CHECK-NEXT: %[[I:.*]] = arith.index_cast %[[AT_FULL]] : index to i64
// CHECK-NEXT: %[[FULL:.*]] = llvm.getelementptr %[[BASE:.*]][%[[I]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
// CHECK-NEXT: %[[AT_EMPTY:.*]] = arith.constant 98328 : index
// CHECK-NEXT: %[[I:.*]] = arith.index_cast %[[AT_EMPTY]] : index to i64
// CHECK-NEXT: %[[EMPTY:.*]] = llvm.getelementptr %[[BASE]][%[[I]]]
// Stages 0 and 1, then stage 2's full and empty barrier, and no fourth stage.
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[CONSUMERS:.*]] = arith.constant 256 : i32
// CHECK-COUNT-4: nvvm.mbarrier.init
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[I:.*]] = arith.index_cast %[[TWO]] : index to i64
// CHECK-NEXT: %[[F2:.*]] = llvm.getelementptr %[[FULL]][%[[I]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: nvvm.mbarrier.init %[[F2]], %[[ONE]]
// CHECK: %[[E2:.*]] = llvm.getelementptr %[[EMPTY]][%{{.*}}] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: nvvm.mbarrier.init %[[E2]], %[[CONSUMERS]]
// CHECK-NEXT: nvvm.fence.mbarrier.init
// Producer: the iteration's kernel-wide number, (t - block.x) / grid.x tiles done times the
// K loop's trip count plus k, is stage n mod 3 of turn n div 3.
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK-NEXT: %[[GX:.*]] = gpu.grid_dim x
// CHECK-NEXT: scf.for %[[T:.*]] = %[[BX]] to %{{.*}} step %[[GX]] {
// CHECK-NEXT: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[DT:.*]] = arith.subi %[[T]], %[[BX]] : index
// CHECK-NEXT: %[[DONE:.*]] = arith.divui %[[DT]], %[[GX]] : index
// CHECK: %[[TRIPS:.*]] = arith.maxsi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[IK:.*]] = arith.subi %[[K]], %{{.*}} : index
// CHECK-NEXT: %[[BEFORE:.*]] = arith.muli %[[DONE]], %[[TRIPS]] : index
// CHECK-NEXT: %[[N:.*]] = arith.addi %[[BEFORE]], %[[IK]] : index
// CHECK-NEXT: %[[S:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[STAGE:.*]] = arith.remui %[[N]], %[[S]] : index
// CHECK-NEXT: %[[S:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[TURN:.*]] = arith.divui %[[N]], %[[S]] : index
// CHECK-NEXT: %[[ODD:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[PARITY:.*]] = arith.andi %[[TURN]], %[[ODD]] : index
// CHECK-NEXT: %[[PARITY32:.*]] = arith.index_cast %[[PARITY]] : index to i32
// CHECK-NEXT: %[[FLIP:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[WAIT:.*]] = arith.xori %[[PARITY32]], %[[FLIP]] : i32
// CHECK: %[[SE:.*]] = arith.index_cast %[[STAGE]] : index to i64
// CHECK-NEXT: %[[E:.*]] = llvm.getelementptr %[[EMPTY]][%[[SE]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i64
// CHECK-NEXT: nvvm.mbarrier.try_wait.parity %[[E]], %[[WAIT]]
// CHECK: %[[TX:.*]] = arith.constant 32768 : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %[[TX]]
// A stage is 32768 bytes: its A tile at stage << 15, its B tile 16384 bytes on.
// CHECK: %[[SHIFT:.*]] = arith.constant 15 : index
// CHECK-NEXT: %[[AT:.*]] = arith.shli %[[STAGE]], %[[SHIFT]] : index
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg6,
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg7,
// CHECK: } {tile.stages = 3 : i64}
// CHECK-NEXT: } {tile.persistent = "linear"}
// Consumers: the same numbering, the full barrier at the turn's parity; two accumulators
// carried; 4 k-steps x 2 wgmma tiles = 8 wgmma; the release of stage (n - 1) mod 3.
// CHECK: nvvm.setmaxregister increase 232
// CHECK: %{{.*}}:2 = scf.for %{{.*}} iter_args(%[[A0:.*]] = %{{.*}}, %[[A1:.*]] = %{{.*}}) -> (!llvm.struct<{{.*}}>, !llvm.struct<{{.*}}>) {
// CHECK: %[[BEFORE:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[N:.*]] = arith.addi %[[BEFORE]], %{{.*}} : index
// CHECK-NEXT: %[[S:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[STAGE:.*]] = arith.remui %[[N]], %[[S]] : index
// CHECK-NEXT: %[[S:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[TURN:.*]] = arith.divui %[[N]], %[[S]] : index
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[W0:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[A0]],
// CHECK: %[[W1:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[A1]],
// CHECK-COUNT-6: nvvm.wgmma.mma_async
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: %[[PREV:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[S:.*]] = arith.constant 3 : index
// CHECK-NEXT: %{{.*}} = arith.remui %[[PREV]], %[[S]] : index
// CHECK: nvvm.mbarrier.arrive
// CHECK: } {tile.stages = 3 : i64}
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK: } {tile.persistent = "linear"}

// -----

// Ping-pong (`consumer(..., pingpong = 1)`): the consumer groups take the tiles in turns, each
// holding a whole 128x128 tile (tiling (1,1,1): four 64x64 wgmma tiles per group). Turn i is
// group i mod 2's; the main loops take turns through named barriers 3 and 4 (1 and 2 are the
// epilogue's): a group waits on 3 + group before its main loop from its second turn on, and
// arrives on the other's once it has issued its wgmmas, before it waits for them.
func.func @pingpong(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr, %tiles: index, %k: index, %kt: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  %A = "tile.make_tensor"(%a, %k, %k, %k) {name = "A"} : (!llvm.ptr, index, index, index) -> !tile.tensor<bf16, "global", "(?,?):(?,1)">
  %B = "tile.make_tensor"(%b, %k, %k, %k) {name = "B"} : (!llvm.ptr, index, index, index) -> !tile.tensor<bf16, "global", "(?,?):(?,1)">
  %C = "tile.make_tensor"(%c, %k, %k, %k) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %sA = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %sB = "tile.alloc_shared"() {name = "sB"} : () -> !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %mma = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.bf16.bf16", "(1,1,1)">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.execute_region {
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %gx = "tile.grid_dim"() {dim = 0 : i64} : () -> index
      scf.for %t = %bx to %tiles step %gx {
        scf.for %i = %c0 to %kt step %c1 {
          %ta = "tile.local_tile"(%A, %t, %i) {coord = "(?,?)", tile = array<i64: 128, 64>} : (!tile.tensor<bf16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<bf16, "global", "(128,64):(?,1)">
          "tile.copy"(%ta, %sA) {atom = "tma"} : (!tile.tensor<bf16, "global", "(128,64):(?,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
          %tb = "tile.local_tile"(%B, %t, %i) {coord = "(?,?)", tile = array<i64: 128, 64>} : (!tile.tensor<bf16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<bf16, "global", "(128,64):(?,1)">
          "tile.copy"(%tb, %sB) {atom = "tma"} : (!tile.tensor<bf16, "global", "(128,64):(?,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
        } {tile.stages = 3 : i64}
      } {tile.persistent = "linear"}
      scf.yield
    } {tile.registers = 40 : i64, tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %gx = "tile.grid_dim"() {dim = 0 : i64} : () -> index
      scf.for %t = %bx to %tiles step %gx {
        %acc = "tile.fragment"(%mma) {block_shape = array<i64: 128, 128>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.bf16.bf16", "(1,1,1)">) -> !tile.tensor<f32, "register", "(32,1,2):(1,32,32)">
        "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,2):(1,32,32)">) -> ()
        scf.for %i = %c0 to %kt step %c1 {
          "tile.gemm"(%mma, %sA, %sB, %acc) : (!tile.mma<"sm90.wgmma_64x64x16.f32.bf16.bf16", "(1,1,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,2):(1,32,32)">) -> ()
        } {tile.stages = 3 : i64}
        %tc = "tile.local_tile"(%C, %t, %t) {coord = "(?,?)", tile = array<i64: 128, 128>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(128,128):(?,1)">
        "tile.store"(%acc, %tc) : (!tile.tensor<f32, "register", "(32,1,2):(1,32,32)">, !tile.tensor<f32, "global", "(128,128):(?,1)">) -> ()
      } {tile.persistent = "linear"}
      scf.yield
    } {tile.pingpong = 1 : i64, tile.registers = 232 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  return
}

// One group reads each stage, so an empty barrier waits for 128 arrivals, not 256.
// CHECK-LABEL: func.func @pingpong(
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[READERS:.*]] = arith.constant 128 : i32
// CHECK-NEXT: nvvm.mbarrier.init %{{.*}}, %[[ONE]]
// CHECK-NEXT: nvvm.mbarrier.init %{{.*}}, %[[READERS]]
// CHECK: nvvm.setmaxregister increase 232
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK-NEXT: %[[GX:.*]] = gpu.grid_dim x
// CHECK-NEXT: scf.for %[[T:.*]] = %[[BX]] to %{{.*}} step %[[GX]] {
// CHECK-NEXT: %[[DT:.*]] = arith.subi %[[T]], %[[BX]] : index
// CHECK-NEXT: %[[TURN:.*]] = arith.divui %[[DT]], %[[GX]] : index
// The group (warp group - 1) broadcast from lane 0, so that ptxas knows the branch is uniform.
// CHECK-NEXT: %[[LANE0:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[WIDTH:.*]] = arith.constant 32 : i32
// CHECK-NEXT: %[[FIRST:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[OWN:.*]] = arith.subi %{{.*}}, %[[FIRST]] : index
// CHECK-NEXT: %[[OWN32:.*]] = arith.index_cast %[[OWN]] : index to i32
// CHECK-NEXT: %[[SHUFFLED:.*]], %{{.*}} = gpu.shuffle idx %[[OWN32]], %[[LANE0]], %[[WIDTH]] : i32
// CHECK-NEXT: %[[GROUP:.*]] = arith.index_cast %[[SHUFFLED]] : i32 to index
// CHECK-NEXT: %[[ODD:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[WHOSE:.*]] = arith.andi %[[TURN]], %[[ODD]] : index
// CHECK-NEXT: %[[MINE:.*]] = arith.cmpi eq, %[[WHOSE]], %[[GROUP]] : index
// CHECK-NEXT: scf.if %[[MINE]] {
// CHECK: %[[LATER:.*]] = arith.cmpi ugt, %[[TURN]], %{{.*}} : index
// CHECK: scf.if %[[LATER]] {
// CHECK-NEXT: %[[THREE:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[OWN:.*]] = arith.addi %{{.*}}, %[[THREE]] : index
// CHECK-NEXT: %[[OWN32:.*]] = arith.index_cast %[[OWN]] : index to i32
// CHECK-NEXT: %[[BOTH:.*]] = arith.constant 256 : i32
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.count"(%[[OWN32]], %[[BOTH]])
// CHECK-NEXT: }
// The ring's counter numbers every turn's iterations, the other group's included.
// CHECK-NEXT: %{{.*}}:4 = scf.for %{{.*}} iter_args(
// CHECK: arith.divui %{{.*}}, %[[GX]] : index
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-COUNT-16: nvvm.wgmma.mma_async
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: } {tile.stages = 3 : i64}
// After the main loop, before waiting for its wgmmas: the other group's turn, if one follows.
// CHECK: %[[FOLLOWS:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[OTHER:.*]] = arith.subi %[[FOUR]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[FOLLOWS]] {
// CHECK-NEXT: %[[OTHER32:.*]] = arith.index_cast %[[OTHER]] : index to i32
// CHECK-NEXT: %[[BOTH:.*]] = arith.constant 256 : i32
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.barrier.cta.arrive.aligned.count"(%[[OTHER32]], %[[BOTH]])
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.count"(%{{.*}}, %{{.*}}) : (i32, i32) -> ()
// CHECK: } {tile.persistent = "linear"}
