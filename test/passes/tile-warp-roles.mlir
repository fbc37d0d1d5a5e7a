// tile-warp-roles: each role of a warp_specialize block (once tile-ring has built its ring and
// the rungs have lowered the roles' ops) becomes a branch of an if / else-if chain on the warp
// group, opened by setmaxnreg; the producer runs on one thread; a block barrier in a role
// becomes the role's named barrier; ping-pong consumers take the persistent loop's turns.
// Negative cases: tile-warp-roles.mlir.bad.
// RUN: tile-opt -p tile-warp-roles --split-input-file --allow-unregistered-dialect %s | filecheck %s
// RUN: tile-opt -p tile-warp-roles --split-input-file --verify-diagnostics %s.bad

// CHECK-LABEL: func.func @roles(
// CHECK: %[[LANE:.*]] = arith.andi %{{.*}}, %{{.*}} : index
// CHECK: %[[SINGLE:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK: %[[WG:.*]] = arith.shrui %{{.*}}, %{{.*}} : index
// CHECK: %[[PRODUCER:.*]] = arith.cmpi eq, %[[WG]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[PRODUCER]] {
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK-NEXT: scf.if %[[SINGLE]] {
// CHECK-NEXT: "test.load"
// CHECK: } else {
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK: %[[TWO:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[CONSUMER:.*]] = arith.ori %[[ONE]], %[[TWO]] : i1
// CHECK-NEXT: scf.if %[[CONSUMER]] {
// CHECK: nvvm.setmaxregister  increase 232
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.count"(%{{.*}}, %[[C256:.*]]) : (i32, i32) -> ()
// CHECK-NEXT: "test.store"
// CHECK-NOT: gpu.barrier
// CHECK-NOT: tile.warp_specialize

// CHECK-LABEL: func.func @pingpong(
// CHECK: scf.for %[[TURN:.*]] = %{{.*}} to %arg0 step
// CHECK: %[[GROUP:.*]], %{{.*}} = gpu.shuffle  idx
// CHECK: %[[G:.*]] = arith.index_cast %[[GROUP]] : i32 to index
// CHECK: %[[PARITY:.*]] = arith.andi %{{.*}}, %{{.*}} : index
// CHECK: %[[MINE:.*]] = arith.cmpi eq, %[[PARITY]], %[[G]] : index
// CHECK: scf.if %[[MINE]] {
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.count"
// CHECK: scf.for
// CHECK-NEXT: "test.mma"
// CHECK-NEXT: } {tile.stages = 4 : i64}
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.arrive.aligned.count"
// CHECK: "test.wait"
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.count"(%{{.*}}, %{{.*}})
// CHECK: } {tile.persistent = "row"}

// Cooperative consumers: the producer (40 registers) on one thread of warp group 0, the
// consumers (232) on groups 1 and 2; their block barrier becomes named barrier 3 of 256 threads.
func.func @roles() attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  scf.execute_region {
    scf.execute_region {
      "test.load"() : () -> ()
      scf.yield
    } {tile.registers = 40 : i64, tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      gpu.barrier
      "test.store"() : () -> ()
      scf.yield
    } {tile.registers = 232 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.ring, tile.warp_specialize}
  return
}

// -----

// Ping-pong: turn t of the persistent loop is group t mod 2's (its index broadcast from lane 0),
// which waits on its named barrier (3 + group, 256) before its main loop from its second turn
// on and, right after the loop, arrives on the other's when a turn follows; a barrier of the
// group is its own (1 + group, 128).
func.func @pingpong(%n: index, %kt: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.execute_region {
    scf.execute_region {
      scf.yield
    } {tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      scf.for %t = %c0 to %n step %c1 {
        scf.for %k = %c0 to %kt step %c1 {
          "test.mma"() : () -> ()
        } {tile.stages = 4 : i64}
        "test.wait"() : () -> ()
        gpu.barrier
      } {tile.persistent = "row"}
      scf.yield
    } {tile.pingpong = 1 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.ring, tile.warp_specialize}
  return
}
