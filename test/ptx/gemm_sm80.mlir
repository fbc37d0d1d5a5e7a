// examples/gemm_sm80.tile to PTX, pipelined by tile-pipeline: STAGES = 4 (32 KiB of shared
// memory per operand, 64 KiB in all: past the 48 KiB static limit, so outline-tile-kernels puts
// both in one extern dynamic array, sA at 0 and sB at 32768). Prologue: 3 commit groups. Per
// k-tile: wait_group 2 and one barrier, then 8 cp.async.cg of 16 bytes per thread (source size
// in a register: zero fill at ragged edges) for tile k+3, one commit group, and per 16-wide
// k-step 4 ldmatrix.x4 for A (4 m-atoms of the warp's 64 rows)
// and 4 for B (8 n-atoms), 32 mma.sync m16n8k16; the 128 f32 accumulators stay in registers.
// REQUIRES: ptxas
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -o %t.80.ptx
// RUN: filecheck %s < %t.80.ptx
// RUN: filecheck %s --check-prefix=ASYNC < %t.80.ptx
// RUN: ptxas -v -arch=sm_80 %t.80.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_90a -o %t.90.ptx
// RUN: filecheck %s < %t.90.ptx
// RUN: ptxas -v -arch=sm_90a %t.90.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS

// CHECK-NOT: .shared .align 16 .b8 __smem
// CHECK: .extern .shared .align 16 .b8 __tile_dynamic_smem[];
// CHECK-NOT: .shared .align 16 .b8 __smem
// CHECK-LABEL: .visible .entry gemm(
// CHECK-NOT: .local
// CHECK-COUNT-4: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-NOT: ldmatrix.sync.aligned.m8n8.x4.trans
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: cvt.rn.f16.f32
// CHECK-NOT: .local

// Four groups in all (three in the prologue, one per iteration; LLVM lays the loop's copy
// blocks out before its head), then the loop head: wait until one group is pending and the one
// barrier of the kernel (the gemm needs none of its own); the drain waits for all groups.
// ASYNC: .extern .shared .align 16 .b8 __tile_dynamic_smem[];
// ASYNC-NOT: bar.sync
// ASYNC-COUNT-4: cp.async.commit_group;
// ASYNC-NOT: cp.async.commit_group
// ASYNC-NOT: bar.sync
// ASYNC: cp.async.wait_group 2;
// ASYNC-NEXT: bar.sync 0;
// ASYNC-NOT: bar.sync
// ASYNC: cp.async.wait_group 0;
// ASYNC-NOT: bar.sync
// ASYNC-NOT: cp.async

// PTXAS: Compiling entry function 'gemm'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// No static shared memory (ptxas would print ", N bytes smem"): all of it is dynamic.
// PTXAS-NEXT: Used {{[0-9]+}} registers, used 1 barriers{{(, [0-9]+ bytes cmem\[0\])?$}}
