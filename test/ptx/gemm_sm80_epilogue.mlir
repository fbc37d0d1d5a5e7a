// examples/gemm_sm80_bias_relu.tile to PTX: gemm_sm80's main loop, then an epilogue that reads
// C and the bias in the accumulator's layout, chunk by chunk where it stores: on the fast path
// (whole tile in bounds, everything aligned) one 4-byte ld.global.v2.b16 per C pair and per
// bias pair (the bias's rows share addresses, so a pair serves both rows of an atom), f32 math,
// relu as max.NaN.f32 (NaN in, NaN out, as torch), two f16 pairs packed and stored with one
// st.global.b32 each, and only then the next chunk's loads. Registers stay those of the main
// loop: no spills, no local memory. ACT picks the activation (0: none, 2: gelu).
// REQUIRES: ptxas
// RUN: tilec compile %repo/examples/gemm_sm80_bias_relu.tile --emit ptx --arch sm_80 --resource-usage -o %t.80.ptx 2> %t.80.ru
// RUN: filecheck %s < %t.80.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.80.ru
// RUN: tilec compile %repo/examples/gemm_sm80_bias_relu.tile --emit ptx --arch sm_90a --resource-usage -o %t.90.ptx 2> %t.90.ru
// RUN: filecheck %s < %t.90.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.90.ru
// RUN: tilec compile %repo/examples/gemm_sm80_bias_relu.tile -D ACT=0 --emit ptx --resource-usage -o %t.none.ptx 2> %t.none.ru
// RUN: filecheck %s --check-prefix=NONE < %t.none.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.none.ru
// BETA = 0 never loads C: the bias's 32 pair loads (16 chunks × 2 rows) remain, C's 64 are gone.
// RUN: tilec compile %repo/examples/gemm_sm80_bias_relu.tile -D BETA=0 --emit ptx --resource-usage -o %t.noc.ptx 2> %t.noc.ru
// RUN: filecheck %s --check-prefix=NOC < %t.noc.ptx
// RUN: filecheck %s --check-prefix=WITHC < %t.80.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.noc.ru
// RUN: tilec compile %repo/examples/gemm_sm80_bias_relu.tile -D ACT=2 --emit ptx --resource-usage -o %t.gelu.ptx 2> %t.gelu.ru
// RUN: filecheck %s --check-prefix=NONE < %t.gelu.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.gelu.ru

// CHECK-LABEL: .visible .entry gemm_bias_act(
// CHECK-NOT: .local
// CHECK: cp.async.cg.shared.global
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: ld.global.v2.b16
// CHECK: ld.global.v2.b16
// CHECK: max.NaN.f32
// CHECK: cvt.rn.f16x2.f32
// CHECK-NEXT: st.global.b32
// CHECK-NEXT: cvt.rn.f16x2.f32
// CHECK-NEXT: st.global.b32
// CHECK-NOT: st.global
// CHECK: ld.global.v2.b16
// CHECK-NOT: .local

// NONE-LABEL: .visible .entry gemm_bias_act(
// NONE: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// NONE-NOT: max.NaN.f32
// NONE: st.global.b32
// NONE-NOT: max.NaN.f32

// PTXAS: kernel {{ +}}registers{{ +}}spill stores B{{ +}}spill loads B{{ +}}shared B{{ +}}stack B{{ +}}barriers
// PTXAS-NEXT: gemm_bias_act {{ +[0-9]+ +0 +0 +[0-9]+ +0 +[0-9]+$}}

// NOC-LABEL: .visible .entry gemm_bias_act(
// NOC-COUNT-32: ld.global.v2.b16
// NOC-NOT: ld.global.v2.b16
// WITHC-LABEL: .visible .entry gemm_bias_act(
// WITHC-COUNT-96: ld.global.v2.b16
// WITHC-NOT: ld.global.v2.b16
