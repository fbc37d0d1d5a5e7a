// examples/gemm_sm80_batched.tile to PTX: batch block.z of A, B and C is base + z * stride
// (a runtime stride each, read from the kernel's arguments), then gemm_sm80's main loop and
// store unchanged: the same cp.async, ldmatrix and mma.sync, no spills, no local memory. With
// -D NARROW=1 rows aligned to 8 or 4 bytes only go in cp.async.ca of that width, still
// spill-free; without, they go element by element.
// REQUIRES: ptxas
// RUN: tilec compile %repo/examples/gemm_sm80_batched.tile --emit ptx --arch sm_80 --resource-usage -o %t.80.ptx 2> %t.80.ru
// RUN: filecheck %s < %t.80.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.80.ru
// RUN: tilec compile %repo/examples/gemm_sm80_batched.tile --emit ptx --arch sm_90a --resource-usage -o %t.90.ptx 2> %t.90.ru
// RUN: filecheck %s < %t.90.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.90.ru
// RUN: not grep -q cp.async.ca %t.90.ptx
// RUN: tilec compile %repo/examples/gemm_sm80_batched.tile -D NARROW=1 --emit ptx --arch sm_90a --resource-usage -o %t.n.ptx 2> %t.n.ru
// RUN: filecheck %s --check-prefix=NARROW < %t.n.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.n.ru

// A, B, C, alpha, then L, M, K, sa, lda, N, sb, ldb, sc, ldc.
// CHECK-LABEL: .visible .entry gemm_batched(
// CHECK-NEXT: .param .u64 .ptr .global .align 1 gemm_batched_param_0,
// CHECK-NEXT: .param .u64 .ptr .global .align 1 gemm_batched_param_1,
// CHECK-NEXT: .param .u64 .ptr .global .align 1 gemm_batched_param_2,
// CHECK-NEXT: .param .f32 gemm_batched_param_3,
// CHECK-COUNT-9: .param .u64 gemm_batched_param_{{[0-9]+}},
// CHECK-NEXT: .param .u64 gemm_batched_param_13
// CHECK-NOT: .local
// CHECK: mov.u32 %r{{[0-9]+}}, %ctaid.z;
// CHECK: cp.async.cg.shared.global
// NARROW: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 8
// NARROW: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: st.global.b32
// CHECK-NOT: .local

// PTXAS: kernel {{ +}}registers{{ +}}spill stores B{{ +}}spill loads B{{ +}}shared B{{ +}}stack B{{ +}}barriers
// PTXAS-NEXT: gemm_batched {{ +[0-9]+ +0 +0 +[0-9]+ +0 +[0-9]+$}}
