// convert-tile-copies: a block-level copy becomes per-thread accesses by its atom's family:
// `auto` 16-byte vector loads and stores (a uniform scf.if picks them when the tile is inside
// the tensor and aligned; predicated ones otherwise), `cp_async.*` nvvm.cp.async (16 bytes,
// zero-filling past the bounds: the edge version passes the source size). It reads the views
// convert-tile-views cast and the kernel's thread index, read once at its top and tagged for
// convert-tile-to-gpu, which reads the same one (and refuses a copy itself).
// RUN: tile-opt -p tile-async-waits,convert-tile-views,convert-tile-copies %s | filecheck %s
// RUN: tile-opt -p tile-async-waits,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu %s | filecheck %s --check-prefix=LOWERED
// RUN: not tile-opt -p tile-async-waits,convert-tile-views,convert-tile-to-gpu %s 2>&1 | filecheck %s --check-prefix=ALONE
// RUN: tile-opt -p convert-tile-views,convert-tile-copies --split-input-file --verify-diagnostics %s.bad

// CHECK-LABEL: func.func @copies(
// CHECK-NEXT: %[[T:.*]] = gpu.thread_id x {tile.thread_index = "entry"}
// Global -> shared, `auto`: vector<8xf16> loads from the global view, stores to the shared one.
// CHECK: scf.if
// CHECK: arith.shli %[[T]], %c3
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr<3>
// Global -> shared, cp.async: whole 16-byte chunks, then the edge version with a source size.
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
// tile-async-waits' commit and wait stay for convert-tile-to-gpu.
// CHECK: "tile.async_commit"
// CHECK: "tile.async_wait"
// Shared -> global, `auto`.
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<8xf16>
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr<1>
// CHECK-NOT: "tile.copy"
// CHECK: return

// One thread index, untagged at the end.
// LOWERED-LABEL: func.func @copies(
// LOWERED-NEXT: gpu.thread_id x
// LOWERED-NOT: gpu.thread_id
// LOWERED-NOT: tile.thread_index
// LOWERED-NOT: "tile.
// LOWERED: return

// ALONE: error: 'tile.copy' is lowered by convert-tile-copies, which must run first
func.func @copies(%arg0: !llvm.ptr, %arg1: index, %arg2: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg2, %arg2) {name = "x"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %2 = "tile.local_tile"(%0, %1, %1) {coord = "(?,?)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
  %3 = "tile.alloc_shared"() {name = "a"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %4 = "tile.alloc_shared"() {name = "b"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  "tile.copy"(%2, %3) {atom = "auto"} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
  "tile.copy"(%2, %4) {atom = "cp_async.cg.16"} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
  "tile.copy"(%4, %2) {atom = "auto"} : (!tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f16, "global", "(64,64):(?,1)">) -> ()
  return
}
