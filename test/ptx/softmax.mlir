// examples/softmax.tile to PTX: each thread reads its 8 halves of the row once (one 16-byte
// load), reduces them in registers, then butterfly shuffles and shared memory across the 16
// warps (twice: max, sum), and writes one 16-byte vector; no local memory.
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
// CHECK: st.global.v4.b32
// CHECK-NOT: .local
