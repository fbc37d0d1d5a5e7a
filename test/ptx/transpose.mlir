// examples/transpose.tile to PTX: 16-byte global loads and stores on both sides of a swizzled
// shared tile (the swizzle's xor): 16-byte shared stores, 4-byte shared loads (a transposed
// read has no contiguity), one barrier, no local memory.
// RUN: tilec compile %repo/examples/transpose.tile --emit ptx | filecheck %s
// RUN: tilec compile %repo/examples/transpose.tile --emit ptx --arch sm_90a | filecheck %s

// CHECK-LABEL: .visible .entry transpose(
// CHECK: .shared .align 16 .b8 __smem_transpose_s[16384];
// CHECK-NOT: .local
// CHECK: ld.global.v4.b32
// CHECK: xor.b{{32|64}}
// CHECK: st.shared.v4.b32
// CHECK: bar.sync 0;
// CHECK: ld.shared.b32
// CHECK: st.global.v4.b32
// CHECK-NOT: st.shared.b32
// CHECK-NOT: .local
