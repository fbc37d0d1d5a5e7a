// examples/gemm_sm80.tile to PTX with its defaults: 128×256×64 tiles over 8 warps of 64×64,
// STAGES = 3 (48 KiB per stage, 144 KiB in all: past the 48 KiB static limit, so
// outline-tile-kernels puts both operands in one extern dynamic array). Prologue: 2 commit
// groups. Per k-tile: 4 + 8 cp.async.cg of 16 bytes per thread for tile k+2 (plain inside the
// tensor, a source size in a register at ragged edges: zero fill), one commit group, a
// wait_group 1 (= STAGES - 2) and one barrier; per 16-wide k-step 4 ldmatrix.x4 for A (4
// m-atoms of the warp's 64 rows) and 4 for B (8 n-atoms), 32 mma.sync m16n8k16; the 128 f32
// accumulators stay in registers.
// REQUIRES: ptxas
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -o %t.80.ptx
// RUN: filecheck %s < %t.80.ptx
// RUN: filecheck %s --check-prefix=ASYNC < %t.80.ptx
// RUN: ptxas -v -arch=sm_80 %t.80.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -D PREFETCH=1 -D BK=32 -D STAGES=4 -o %t.pre.ptx
// RUN: filecheck %s --check-prefix=PRE < %t.pre.ptx
// RUN: ptxas -v -arch=sm_80 %t.pre.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -D MA=1 -D MB=1 -D T=bf16 -D BN=128 -D WN=2 -D BK=32 -D STAGES=4 -o %t.tt.ptx
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

// Three groups in all (two in the prologue, one per iteration); LLVM lays the loop's body out
// before its head, so the text shows the commits, 4 k-steps of 32 mma.sync, then the head:
// wait until one group is pending and the one barrier of the loop; the drain waits for all.
// ASYNC: .extern .shared .align 16 .b8 __tile_dynamic_smem[];
// ASYNC-NOT: bar.sync
// ASYNC-COUNT-3: cp.async.commit_group;
// ASYNC-NOT: cp.async.commit_group
// ASYNC-NOT: bar.sync
// ASYNC-COUNT-128: mma.sync.aligned.m16n8k16
// ASYNC-NOT: mma.sync
// ASYNC: cp.async.wait_group 1;
// ASYNC-NEXT: bar.sync 0;
// ASYNC-NOT: bar.sync
// ASYNC: cp.async.wait_group 0;
// ASYNC-NOT: bar.sync
// ASYNC-NOT: cp.async

// PREFETCH = 1 (BK = 32, 4 stages): tile 0's wait (two groups pending) and barrier before the
// loop and k-step 0's fragments; in the loop the commit, k-step 1's fragments before k-step 0's
// 32 mma.sync, then the next tile's wait and barrier and its k-step 0 fragments before k-step
// 1's mma.sync; the drain waits for all groups.
// PRE: .extern .shared .align 16 .b8 __tile_dynamic_smem[];
// PRE-NOT: bar.sync
// PRE-COUNT-3: cp.async.commit_group;
// PRE-NOT: bar.sync
// PRE: cp.async.wait_group 2;
// PRE-NEXT: bar.sync 0;
// PRE-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PRE-NOT: mma.sync
// PRE: cp.async.commit_group;
// PRE-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PRE-NOT: bar.sync
// PRE-COUNT-32: mma.sync.aligned.m16n8k16
// PRE-NOT: mma.sync
// PRE: cp.async.wait_group 2;
// PRE-NEXT: bar.sync 0;
// PRE-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PRE-COUNT-32: mma.sync.aligned.m16n8k16
// PRE-NOT: bar.sync
// PRE-NOT: cp.async.commit_group
// PRE: cp.async.wait_group 0;
// PRE-NOT: bar.sync
// PRE-NOT: cp.async

// MN-major A and B (MA = MB = 1), bf16, 128×128×32 tiles (MN-major operands spill at BK = 64):
// every fragment load is an ldmatrix.trans (4 for A and 4 for B per k-step), the atom is bf16's.
// TRANS-LABEL: .visible .entry gemm(
// TRANS-NOT: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// TRANS-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// TRANS: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// TRANS: cvt.rn.bf16.f32

// PTXAS: Compiling entry function 'gemm'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// No static shared memory (ptxas would print ", N bytes smem"): all of it is dynamic.
// PTXAS-NEXT: Used {{[0-9]+}} registers, used 1 barriers{{(, [0-9]+ bytes cmem\[0\])?$}}
