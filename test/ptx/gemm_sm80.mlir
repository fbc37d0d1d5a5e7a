// examples/gemm_sm80.tile to PTX, pipelined by tile-pipeline: STAGES = 4 (32 KiB of shared
// memory per operand, 64 KiB in all: past the 48 KiB static limit, so outline-tile-kernels puts
// both in one extern dynamic array, sA at 0 and sB at 32768). Prologue: 3 commit groups. Per
// k-tile: 8 cp.async.cg of 16 bytes per thread for tile k+3 (plain inside the tensor, source
// size in a register at ragged edges: zero fill), one commit group, and per 16-wide k-step 4
// ldmatrix.x4 for A (4 m-atoms of the warp's 64 rows) and 4 for B (8 n-atoms), loaded one
// k-step ahead, 32 mma.sync m16n8k16; the 128 f32 accumulators stay in registers.
// REQUIRES: ptxas
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -o %t.80.ptx
// RUN: filecheck %s < %t.80.ptx
// RUN: filecheck %s --check-prefix=ASYNC < %t.80.ptx
// RUN: ptxas -v -arch=sm_80 %t.80.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -D MA=1 -D MB=1 -D T=bf16 -o %t.tt.ptx
// RUN: filecheck %s --check-prefix=TRANS < %t.tt.ptx
// RUN: ptxas -v -arch=sm_80 %t.tt.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS
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

// Four groups in all (three in the prologue, one per iteration), then tile 0's wait (until two
// groups are pending) and barrier before the loop, and k-step 0's fragments. In the loop: the
// commit, k-step 1's fragments loaded before k-step 0's 32 mma.sync, then the wait and barrier
// for the next tile and its k-step 0 fragments before k-step 1's mma.sync; the drain waits for
// all groups. Three waits and two barriers in the kernel, each wait_group 2 followed by one.
// ASYNC: .extern .shared .align 16 .b8 __tile_dynamic_smem[];
// ASYNC-NOT: bar.sync
// ASYNC-COUNT-3: cp.async.commit_group;
// ASYNC-NOT: bar.sync
// ASYNC: cp.async.wait_group 2;
// ASYNC-NEXT: bar.sync 0;
// ASYNC-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// ASYNC-NOT: mma.sync
// ASYNC: cp.async.commit_group;
// ASYNC-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// ASYNC-NOT: bar.sync
// ASYNC-COUNT-32: mma.sync.aligned.m16n8k16
// ASYNC-NOT: mma.sync
// ASYNC: cp.async.wait_group 2;
// ASYNC-NEXT: bar.sync 0;
// ASYNC-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// ASYNC-COUNT-32: mma.sync.aligned.m16n8k16
// ASYNC-NOT: bar.sync
// ASYNC-NOT: cp.async.commit_group
// ASYNC: cp.async.wait_group 0;
// ASYNC-NOT: bar.sync
// ASYNC-NOT: cp.async

// MN-major A and B (MA = MB = 1), bf16: every fragment load is an ldmatrix.trans (4 for A and
// 4 for B per k-step), the atom is bf16's.
// TRANS-LABEL: .visible .entry gemm(
// TRANS-NOT: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// TRANS-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// TRANS: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// TRANS: cvt.rn.bf16.f32

// PTXAS: Compiling entry function 'gemm'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// No static shared memory (ptxas would print ", N bytes smem"): all of it is dynamic.
// PTXAS-NEXT: Used {{[0-9]+}} registers, used 1 barriers{{(, [0-9]+ bytes cmem\[0\])?$}}
