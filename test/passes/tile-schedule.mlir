// tile-schedule: persistent tile loops written out. A grouped raster walks G rows of tiles
// column by column; a split tail makes the loop walk units (whole tiles, the last wave's tiles
// split along K or stream-K, chosen at launch), records each in a tile.work_unit, runs the
// pipelined loop over the unit's K range and after it, under `scf.if` the unit owns the tile,
// sums the accumulator over the tile's units before the epilogue, else hands its part over. Negative cases:
// tile-schedule.mlir.bad.
// RUN: tile-opt -p tile-schedule --split-input-file --allow-unregistered-dialect %s | filecheck %s
// RUN: tile-opt -p tile-schedule --split-input-file --verify-diagnostics %s.bad

// CHECK-LABEL: func.func @raster(
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[W:.*]] = arith.shli %arg1, %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.divui %[[T]], %[[W]] : index
// CHECK: %[[FIRST:.*]] = arith.shli %[[ROW]], %{{.*}} : index
// CHECK: %[[REST:.*]] = arith.subi %arg0, %[[FIRST]] : index
// CHECK: %[[SIZE:.*]] = arith.minui %[[REST]], %{{.*}} : index
// CHECK: %[[IN:.*]] = arith.remui %[[T]], %[[W]] : index
// CHECK: %[[DM:.*]] = arith.remui %[[IN]], %[[SIZE]] : index
// CHECK: %[[M:.*]] = arith.addi %[[FIRST]], %[[DM]] : index
// CHECK: %[[N:.*]] = arith.divui %[[IN]], %[[SIZE]] : index
// CHECK: "test.use"(%[[M]], %[[N]])
// CHECK-NOT: tile.tile_coord

// CHECK-LABEL: func.func @split(
// CHECK: scf.for %[[U:.*]] = %{{.*}} to %[[UNITS:.*]] step
// CHECK: "tile.work_unit"(%[[START:.*]], %[[PEER:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {width = 1 : i64}
// CHECK: "tile.fill"
// CHECK: scf.for %{{.*}} = %[[BEGIN:.*]] to %[[END:.*]] step
// CHECK: } {tile.stages = 2 : i64}
// CHECK: %[[OWNER:.*]] = arith.xori %[[PEER]], %{{.*}} : i1
// CHECK-NEXT: scf.if %[[OWNER]] {
// CHECK-NEXT: %[[SUM:.*]] = "tile.unit_sum"(%[[ACC:.*]]) :
// CHECK-NEXT: "test.use"(%{{.*}}, %{{.*}}, %[[SUM]])
// CHECK-NEXT: } else {
// CHECK-NEXT: "tile.unit_part"(%[[ACC]])
// CHECK: } {tile.persistent = "row", tile.split_tail}

// Grouped raster: G = 8 rows of tiles walked column by column; m and n from the linear index.
func.func @raster(%tm: index, %tn: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 128, 1, 1>} {
  %total = arith.muli %tm, %tn : index
  %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
  %gx = "tile.grid_dim"() {dim = 0 : i64} : () -> index
  scf.for %t = %bx to %total step %gx {
    %m, %n = "tile.tile_coord"(%t, %tm, %tn) {group = 8 : i64, raster = "grouped"} : (index, index, index) -> (index, index)
    "test.use"(%m, %n) : (index, index) -> ()
  } {tile.persistent = "grouped"}
  return
}

// -----

// A split tail: the loop walks units (its bound rewritten), the pipelined loop the unit's K
// range, a tile.work_unit records the unit, and after the main loop the owner sums the
// accumulator over the tile's units and runs the epilogue; a peer hands its part over.
func.func @split(%tm: index, %tn: index, %kt: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  %mma = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">
  %sA = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %sB = "tile.alloc_shared"() {name = "sB"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.execute_region {
    scf.execute_region {
      scf.yield
    } {tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %total = arith.muli %tm, %tn : index
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %gx = "tile.grid_dim"() {dim = 0 : i64} : () -> index
      scf.for %t = %bx to %total step %gx {
        %m, %n = "tile.tile_coord"(%t, %tm, %tn) {group = 1 : i64, raster = "row"} : (index, index, index) -> (index, index)
        %acc = "tile.fragment"(%mma) {block_shape = array<i64: 128, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">
        "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
        scf.for %k = %c0 to %kt step %c1 {
          "tile.gemm"(%mma, %sA, %sB, %acc) : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
        } {tile.stages = 2 : i64}
        "test.use"(%m, %n, %acc) : (index, index, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      } {tile.persistent = "row", tile.split_tail}
      scf.yield
    } {tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  return
}
