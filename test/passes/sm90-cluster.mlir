// tile-schedule and tile-ring in a kernel with tile.cluster = 2: the persistent walk's m takes the
// block's cluster rank; the copy whose tile is the same in both blocks of the cluster (B's:
// its coordinate does not come from the tile's m) is split in two halves, each block loading
// its own rank's half and multicasting it to both (mask 0b11), the tensor map's box half the
// tile; A's copy (from m) stays a plain load of the whole tile. The consumers release each stage
// to the cluster (mapa to block tid mod 2, then an arrive of the default .release.cta semantics:
// a cluster-scope one costs a MEMBAR.ALL.GPU per arrive, a third of the speed); cluster barriers follow the
// barriers' initialisation and precede the return. Negative cases: sm90-cluster.mlir.bad.
// RUN: tile-opt -p tile-schedule,tile-ring %s | filecheck %s
// RUN: tile-opt -p tile-schedule,tile-ring --split-input-file --verify-diagnostics %s.bad

func.func @pair(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr, %tm: index, %tn: index, %k: index, %kt: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>, tile.cluster = 2 : i64} {
  %A = "tile.make_tensor"(%a, %k, %k, %k) {name = "A"} : (!llvm.ptr, index, index, index) -> !tile.tensor<bf16, "global", "(?,?):(?,1)">
  %B = "tile.make_tensor"(%b, %k, %k, %k) {name = "B"} : (!llvm.ptr, index, index, index) -> !tile.tensor<bf16, "global", "(?,?):(?,1)">
  %C = "tile.make_tensor"(%c, %k, %k, %k) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %sA = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %sB = "tile.alloc_shared"() {name = "sB"} : () -> !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %mma = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.bf16.bf16", "(2,1,1)">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tiles = arith.muli %tm, %tn : index
  scf.execute_region {
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %gx = "tile.grid_dim"() {dim = 0 : i64} : () -> index
      scf.for %t = %bx to %tiles step %gx {
        %mn:2 = "tile.tile_coord"(%t, %tm, %tn) {raster = "linear", group = 1 : i64} : (index, index, index) -> (index, index)
        scf.for %i = %c0 to %kt step %c1 {
          %ta = "tile.local_tile"(%A, %mn#0, %i) {coord = "(?,?)", tile = array<i64: 128, 64>} : (!tile.tensor<bf16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<bf16, "global", "(128,64):(?,1)">
          "tile.copy"(%ta, %sA) {atom = "tma"} : (!tile.tensor<bf16, "global", "(128,64):(?,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
          %tb = "tile.local_tile"(%B, %mn#1, %i) {coord = "(?,?)", tile = array<i64: 128, 64>} : (!tile.tensor<bf16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<bf16, "global", "(128,64):(?,1)">
          "tile.copy"(%tb, %sB) {atom = "tma"} : (!tile.tensor<bf16, "global", "(128,64):(?,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
        } {tile.stages = 4 : i64}
      } {tile.persistent = "linear"}
      scf.yield
    } {tile.registers = 40 : i64, tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %gx = "tile.grid_dim"() {dim = 0 : i64} : () -> index
      scf.for %t = %bx to %tiles step %gx {
        %mn:2 = "tile.tile_coord"(%t, %tm, %tn) {raster = "linear", group = 1 : i64} : (index, index, index) -> (index, index)
        %acc = "tile.fragment"(%mma) {block_shape = array<i64: 128, 128>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.bf16.bf16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,2):(1,32,32)">
        "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,2):(1,32,32)">) -> ()
        scf.for %i = %c0 to %kt step %c1 {
          "tile.gemm"(%mma, %sA, %sB, %acc) : (!tile.mma<"sm90.wgmma_64x64x16.f32.bf16.bf16", "(2,1,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<bf16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,2):(1,32,32)">) -> ()
        } {tile.stages = 4 : i64}
        %tc = "tile.local_tile"(%C, %mn#0, %mn#1) {coord = "(?,?)", tile = array<i64: 128, 128>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(128,128):(?,1)">
        "tile.store"(%acc, %tc) : (!tile.tensor<f32, "register", "(32,1,2):(1,32,32)">, !tile.tensor<f32, "global", "(128,128):(?,1)">) -> ()
      } {tile.persistent = "linear"}
      scf.yield
    } {tile.registers = 232 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  return
}

// The maps: A's box the whole 128x64 tile, B's each block's 64-row half.
// CHECK-LABEL: func.func @pair(
// CHECK-SAME: tile.tma = [{box = array<i64: 128, 64>, name = "tma_A", swizzle = "128B", tensor = "A"}, {box = array<i64: 64, 64>, name = "tma_B", swizzle = "128B", tensor = "B"}]
// Each consumer thread releases the stages of block tid mod 2, so every block's empty barriers
// still count the 256 consumer threads' arrivals.
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[PEER_I:.*]] = arith.andi %thread_id_x, %[[ONE]] : index
// CHECK-NEXT: %[[PEER:.*]] = arith.index_cast %[[PEER_I]] : index to i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %c256_i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// The producer's tile: m = 2 * (t / tiles_n) + the block's rank.
// CHECK: %[[RANK:.*]] = nvvm.read.ptx.sreg.cluster.ctarank : i32
// CHECK-NEXT: %[[RANKI:.*]] = arith.index_castui %[[RANK]] : i32 to index
// CHECK: %[[ROW:.*]] = arith.divui %{{.*}}, %arg4 : index
// CHECK: %[[TWICE:.*]] = arith.shli %[[ROW]], %{{.*}} : index
// CHECK-NEXT: %[[M:.*]] = arith.addi %[[TWICE]], %[[RANKI]] : index
// The full barrier expects both whole tiles (2 x 16384 bytes): half of B comes from the other block.
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK-NEXT: arith.index_cast
// CHECK-NEXT: %[[FULL:.*]] = llvm.getelementptr
// CHECK-NEXT: %c32768_i32 = arith.constant 32768 : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[FULL]], %c32768_i32
// A: the whole tile at row 128 m, into this block alone.
// CHECK: %[[AROW:.*]] = arith.shli %[[M]], %{{.*}} : index
// CHECK: %[[AROWI:.*]] = arith.index_cast %[[AROW]] : index to i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg7, %[[FULL]], box[%{{.*}}, %[[AROWI]]] : !llvm.ptr<7>, !llvm.ptr
// B: rows 64 rank on, 8192 rank bytes into the slot, into both blocks (mask 0b11).
// CHECK: %[[R:.*]] = nvvm.read.ptx.sreg.cluster.ctarank : i32
// CHECK-NEXT: %[[RI:.*]] = arith.index_castui %[[R]] : i32 to index
// CHECK-NEXT: %[[MASK:.*]] = arith.constant 3 : i16
// CHECK-NEXT: %[[C13:.*]] = arith.constant 13 : index
// CHECK-NEXT: %[[BYTES:.*]] = arith.shli %[[RI]], %[[C13]] : index
// CHECK-NEXT: %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT: %[[HALF:.*]] = arith.shli %[[RI]], %[[C6]] : index
// CHECK: %[[BROW:.*]] = arith.addi %{{.*}}, %[[HALF]] : index
// CHECK: %[[BROWI:.*]] = arith.index_cast %[[BROW]] : index to i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %arg8, %[[FULL]], box[%{{.*}}, %[[BROWI]]] multicast_mask = %[[MASK]]
// The consumers release every stage to their peer block, never to their own block alone.
// CHECK-NOT: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK: %[[E:.*]] = nvvm.mapa %{{.*}}, %[[PEER]] : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT: nvvm.mbarrier.arrive %[[E]] : !llvm.ptr<7>
// CHECK-NOT: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK: nvvm.mapa %{{.*}}, %[[PEER]]
// CHECK-NOT: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// No block leaves before the other has sent its last signal.
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: return
