// examples/vadd.tile to PTX: four 16-byte loads per operand and four 16-byte stores per thread
// on the unpredicated path, scalar predicated accesses for the ragged last block, no locals.
// RUN: tilec compile %repo/examples/vadd.tile --emit ptx | filecheck %s
// RUN: tilec compile %repo/examples/vadd.tile --emit ptx --arch sm_90a | filecheck %s
// RUN: tilec compile %repo/examples/vadd.tile --emit ptx | filecheck %s --check-prefix=SCALAR

// CHECK-LABEL: .visible .entry vadd(
// CHECK-NEXT: .param .u64 .ptr .global .align 1 vadd_param_0,
// CHECK-NEXT: .param .u64 .ptr .global .align 1 vadd_param_1,
// CHECK-NEXT: .param .u64 .ptr .global .align 1 vadd_param_2,
// CHECK-NEXT: .param .u64 vadd_param_3
// CHECK-NOT: .local
// CHECK-COUNT-8: ld.global.v4.b32
// CHECK-COUNT-4: st.global.v4.b32
// CHECK-NOT: .local
// SCALAR: ld.global.b32
// SCALAR: st.global.b32
