// examples/softmax.tile to PTX: each thread reads its 32 halves of the row once (four 16-byte
// loads), reduces them in registers, then butterfly shuffles and shared memory across the 4
// warps (twice: max, sum); the division by the row sum is one reciprocal and a multiply per
// element (no div.rn.f32); 16-byte stores; no local memory.
// RUN: tilec compile %repo/examples/softmax.tile --emit ptx | filecheck %s
// RUN: tilec compile %repo/examples/softmax.tile --emit ptx --arch sm_90a | filecheck %s

// CHECK-LABEL: .visible .entry softmax(
// CHECK-NOT: .local
// CHECK: ld.global.v4.b32
// CHECK: shfl.sync.bfly.b32
// CHECK: bar.sync 0;
// CHECK: ex2.approx
// CHECK: shfl.sync.bfly.b32
// CHECK: bar.sync 0;
// CHECK-NOT: div.rn.f32
// CHECK: rcp.rn.f32
// CHECK-NOT: div.rn.f32
// CHECK: st.global.v4.b32
// CHECK-NOT: .local
