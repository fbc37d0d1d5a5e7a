// convert-tile-sync: the block's barrier and the cp.async groups' commit and wait, each where it
// is (tile-async-waits placed the commit and the wait around the copy; convert-tile-copies made
// the copy cp.async). convert-tile-to-gpu alone refuses them.
// RUN: tile-opt -p convert-tile-sync %s | filecheck %s
// RUN: not tile-opt -p convert-tile-to-gpu %s 2>&1 | filecheck %s --check-prefix=ALONE
// RUN: tile-opt -p convert-tile-sync --split-input-file --verify-diagnostics %s.bad

// CHECK-LABEL: func.func @sync(
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: return

// ALONE: error: 'tile.async_commit' is lowered by convert-tile-sync, which must run first
func.func @sync() attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  "tile.async_commit"() : () -> ()
  "tile.async_wait"() {pending = 1 : i64} : () -> ()
  "tile.barrier"() : () -> ()
  "tile.async_wait"() {pending = 0 : i64} : () -> ()
  return
}
