// tile-relayout: a register tensor spread anew through a shared buffer becomes the tile ops the
// rungs lower (barrier, store, barrier, load); one already spread as its result folds away.
// RUN: tile-opt -p tile-relayout %s | filecheck %s
// RUN: tile-opt -p tile-relayout,convert-tile-views,convert-tile-sync,convert-tile-elementwise,convert-tile-memory,convert-tile-to-gpu %s | filecheck %s --check-prefix=LOWERED
// RUN: not tile-opt -p convert-tile-views,convert-tile-sync,convert-tile-elementwise,convert-tile-memory,convert-tile-to-gpu %s 2>&1 | filecheck %s --check-prefix=ALONE
// RUN: tile-opt -p tile-relayout --split-input-file --verify-diagnostics %s.bad
// RUN: tilec compile --emit tile %repo/test/gpu/relayout.tile | tile-opt -p layout-fold,tile-distribute,tile-relayout | filecheck %s --check-prefix=SOURCE
// RUN: tilec compile --report banks %repo/test/gpu/relayout.tile -o %t.ptx 2>&1 | filecheck %s --check-prefix=BANKS

// 8x64 f32 over 128 threads. %x, loaded from the row-major buffer a, holds 16-byte chunks
// along the rows (TV ((16,8),(4,1)):((32,1),(8,8))); through the column-major s it comes back
// in 16-byte chunks down the columns (((128),(4,1)):((4),(1,512))): barrier, store, barrier,
// load. Through a (row-major) itself it is spread as before: no op at all. With like = %x (the
// third relayout), it is read back as %x is: a load of s like %x.
// CHECK-LABEL: func.func @relayout(
// CHECK: %[[X:.*]] = "tile.load"(%[[A:[^)]*]]) {{.*}} -> !tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">
// CHECK-NEXT: "tile.barrier"()
// CHECK-NEXT: "tile.store"(%[[X]], %[[S:[^)]*]])
// CHECK-NEXT: "tile.barrier"()
// CHECK-NEXT: %[[Y:.*]] = "tile.load"(%[[S]]) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "shared", "(8,64):(1,8)">) -> !tile.frag<f32, "(8,64):(1,8)", "((128),(4,1)):((4),(1,512))">
// CHECK-NEXT: "tile.store"(%[[Y]], %[[A]])
// CHECK-NEXT: "tile.barrier"()
// CHECK-NEXT: "tile.store"(%[[Y]], %[[S]])
// CHECK-NEXT: "tile.barrier"()
// CHECK-NEXT: %[[W:.*]] = "tile.load"(%[[S]], %[[X]]) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "shared", "(8,64):(1,8)">, !tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">) -> !tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">
// CHECK-NEXT: "tile.store"(%[[X]], %[[S]])
// CHECK-NEXT: "tile.store"(%[[W]], %[[S]])
// CHECK-NOT: tile.relayout

// Lowered by the rungs that lower the ops it became: four barriers, no tile op left.
// LOWERED-LABEL: func.func @relayout(
// LOWERED-COUNT-4: gpu.barrier
// LOWERED-NOT: gpu.barrier
// LOWERED-NOT: "tile.

// Left to the other rungs, a relayout is refused at its line.
// ALONE: error: 'tile.relayout' is lowered by tile-relayout, which must run first

// From the source (test/gpu/relayout.tile): the transpose's relayout inside its loop, the
// GEMM's two (from a load's spread to the accumulator's, and back to a load's).
// SOURCE-LABEL: func.func @transpose2(
// SOURCE: scf.for
// SOURCE: "tile.barrier"
// SOURCE-NEXT: "tile.store"
// SOURCE-NEXT: "tile.barrier"
// SOURCE-NEXT: "tile.load"
// SOURCE-LABEL: func.func @mma_relayout(
// SOURCE-COUNT-2: "tile.barrier"
// SOURCE: "tile.load"(%{{.*}}, %{{.*}}) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "shared", "(64,64):(64,1)">, !tile.frag<f32, "(4,2,4):(1,4,8)", {{.*}}>) -> !tile.frag<f32, "(4,2,4):(1,4,8)"
// SOURCE-COUNT-2: "tile.barrier"
// SOURCE-NOT: tile.relayout
// The bank report sees the relayout's store and load at its source line: through the swizzled
// column-major buffer, the row writes 2-way, the column reads conflict-free.
// BANKS: relayout.tile:[[LINE:[0-9]+]]:13: shared store, 4 bytes/lane, 16 instructions: 2-way bank conflict
// BANKS-NEXT: relayout.tile:[[LINE]]:13: shared load, 16 bytes/lane, 4 instructions: 1-way (conflict-free)
func.func @relayout() attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %a = "tile.alloc_shared"() {name = "a"} : () -> !tile.tensor<f32, "shared", "(8,64):(64,1)">
  %s = "tile.alloc_shared"() {name = "s"} : () -> !tile.tensor<f32, "shared", "(8,64):(1,8)">
  %x = "tile.load"(%a) {other = 0.0 : f32} : (!tile.tensor<f32, "shared", "(8,64):(64,1)">) -> !tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">
  %y = "tile.relayout"(%x, %s) : (!tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">, !tile.tensor<f32, "shared", "(8,64):(1,8)">) -> !tile.frag<f32, "(8,64):(1,8)", "((128),(4,1)):((4),(1,512))">
  "tile.store"(%y, %a) : (!tile.frag<f32, "(8,64):(1,8)", "((128),(4,1)):((4),(1,512))">, !tile.tensor<f32, "shared", "(8,64):(64,1)">) -> ()
  %z = "tile.relayout"(%x, %a) : (!tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">, !tile.tensor<f32, "shared", "(8,64):(64,1)">) -> !tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">
  %w = "tile.relayout"(%y, %s, %x) : (!tile.frag<f32, "(8,64):(1,8)", "((128),(4,1)):((4),(1,512))">, !tile.tensor<f32, "shared", "(8,64):(1,8)">, !tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">) -> !tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">
  "tile.store"(%z, %s) : (!tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">, !tile.tensor<f32, "shared", "(8,64):(1,8)">) -> ()
  "tile.store"(%w, %s) : (!tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">, !tile.tensor<f32, "shared", "(8,64):(1,8)">) -> ()
  return
}

// Right after a barrier (the source's own), the relayout adds no first barrier of its own.
// CHECK-LABEL: func.func @after_barrier(
// CHECK: "tile.load"
// CHECK-NEXT: "tile.barrier"()
// CHECK-NEXT: "tile.store"
// CHECK-NEXT: "tile.barrier"()
// CHECK-NEXT: "tile.load"
// LOWERED-LABEL: func.func @after_barrier(
// LOWERED-COUNT-2: gpu.barrier
// LOWERED-NOT: gpu.barrier
func.func @after_barrier() attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %a = "tile.alloc_shared"() {name = "a"} : () -> !tile.tensor<f32, "shared", "(8,64):(64,1)">
  %s = "tile.alloc_shared"() {name = "s"} : () -> !tile.tensor<f32, "shared", "(8,64):(1,8)">
  %x = "tile.load"(%a) {other = 0.0 : f32} : (!tile.tensor<f32, "shared", "(8,64):(64,1)">) -> !tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">
  "tile.barrier"() : () -> ()
  %y = "tile.relayout"(%x, %s) : (!tile.frag<f32, "(8,64):(1,8)", "((16,8),(4,1)):((32,1),(8,8))">, !tile.tensor<f32, "shared", "(8,64):(1,8)">) -> !tile.frag<f32, "(8,64):(1,8)", "((128),(4,1)):((4),(1,512))">
  "tile.store"(%y, %a) : (!tile.frag<f32, "(8,64):(1,8)", "((128),(4,1)):((4),(1,512))">, !tile.tensor<f32, "shared", "(8,64):(64,1)">) -> ()
  return
}
