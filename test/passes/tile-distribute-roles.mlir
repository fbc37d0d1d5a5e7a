// tile-distribute in a warp-specialised kernel: a consumer role's register tensors are spread
// over the role's threads, not the block's (lowering/tile_roles.py). Negative cases (a tiling
// that does not cover the role's threads, an f16 wgmma accumulator, a register tensor in the
// producer) are in tile-distribute.mlir.bad.
// RUN: tile-opt -p tile-distribute %s | filecheck %s

// CHECK-LABEL: func.func @consumer_spreads(
// CHECK: "tile.fragment"(%{{.*}}) {{.*}} -> !tile.frag<f32, "(32,1,1):(1,32,32)", "((4,8,8,1),(2,2,1,8)):((256,1,16,8192),(128,8,16,1024))">
// CHECK-NEXT: "tile.reduce"({{.*}}) -> !tile.frag<f32, "(128,1):(1,128)", "(128,64):(1,0) o 0 o ((4,8,8,1),(2,2,1,8)):((256,1,16,8192),(128,8,16,1024))">
// CHECK: "tile.fragment"(%{{.*}}) {{.*}} -> !tile.frag<f32, "(64,1,1):(1,64,64)", "((4,8,4,1,1),(2,2,2,8)):((256,1,16,128,8192),(128,8,64,1024))">
// A consumer role's register tensors are spread over the role's threads: a wgmma's C over
// the two consumer groups (256 threads: as the mma.sync C over 8 x 1 warps), its row max over
// them; with ping-pong (one group a tile) over 128, a 128-row tile's two 64-row wgmma tiles a
// group, its four warps interleaved (threads (lanes, 4, 1, 1)).
func.func @consumer_spreads() attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  %mma = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">
  %pp = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(1,1,1)">
  scf.execute_region {
    scf.execute_region {
      scf.yield
    } {tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %acc = "tile.fragment"(%mma) {block_shape = array<i64: 128, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">
      %m = "tile.reduce"(%acc) {kind = "max", mode = 1 : i64} : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> !tile.tensor<f32, "register", "(128,1):(1,128)">
      scf.yield
    } {tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  scf.execute_region {
    scf.execute_region {
      scf.yield
    } {tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %acc = "tile.fragment"(%pp) {block_shape = array<i64: 128, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(1,1,1)">) -> !tile.tensor<f32, "register", "(64,1,1):(1,64,64)">
      scf.yield
    } {tile.pingpong = 1 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  return
}
