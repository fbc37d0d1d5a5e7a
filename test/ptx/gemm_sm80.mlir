// examples/gemm_sm80.tile to PTX: per k-tile, 8 cp.async.cg of 16 bytes per thread (source
// size in a register: zero fill at ragged edges) into the two swizzled shared tiles, one commit
// group, wait_group 0, a barrier, per 16-wide k-step 4 ldmatrix.x4 for A (4 m-atoms of the warp's 64 rows)
// and 4 for B (8 n-atoms), 32 mma.sync m16n8k16; the 128 f32 accumulators stay in registers.
// REQUIRES: ptxas
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -o %t.80.ptx
// RUN: filecheck %s < %t.80.ptx
// RUN: filecheck %s --check-prefix=ASYNC < %t.80.ptx
// RUN: ptxas -v -arch=sm_80 %t.80.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_90a -o %t.90.ptx
// RUN: filecheck %s < %t.90.ptx
// RUN: ptxas -v -arch=sm_90a %t.90.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS

// CHECK-LABEL: .visible .entry gemm(
// CHECK-NOT: .local
// CHECK: .shared .align 16 .b8 __smem_gemm_sB[8192];
// CHECK: .shared .align 16 .b8 __smem_gemm_sA[8192];
// CHECK: bar.sync 0;
// CHECK-COUNT-4: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-NOT: ldmatrix.sync.aligned.m8n8.x4.trans
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: bar.sync 0;
// CHECK: cvt.rn.f16.f32
// CHECK-NOT: .local

// The wait sits before the gemm's barrier; LLVM places the copy blocks (under the aligned test)
// after the loop body.
// ASYNC: cp.async.commit_group;
// ASYNC-NEXT: cp.async.wait_group 0;
// ASYNC-NEXT: bar.sync 0;
// ASYNC-COUNT-8: cp.async.cg.shared.global [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};

// PTXAS: Compiling entry function 'gemm'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
