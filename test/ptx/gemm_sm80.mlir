// examples/gemm_sm80.tile to PTX with its defaults: 128×256×64 tiles over 8 warps of 64×64,
// STAGES = 3 (48 KiB per stage, 144 KiB in all: past the 48 KiB static limit, so
// outline-tile-kernels puts both operands in one extern dynamic array), PREFETCH = 1. Prologue:
// 2 commit groups, then tile 0's wait (all but STAGES - 2 = 1 groups) and barrier and k-step 0's
// 8 ldmatrix.x4 (4 m-atoms of A, 4 pairs of n-atoms of B). pipeline-steady-state versions the
// loop: blocks whose loop copies only whole tiles (16-byte aligned ones; the example walks its
// k-tiles from the last, so a ragged K tile is the prologue's) run a body that is one basic
// block — 4 + 8 plain cp.async.cg of 16 bytes per thread for iteration k+2's k-tile, one
// commit, 3 k-steps of 32 mma.sync m16n8k16 loading the next k-step's fragments as registers
// free up, the next tile's wait_group 1 and barrier, the last k-step's 32 mma.sync; the rest
// run the general loop, whose copies branch (zero fill at ragged edges, a synchronous copy
// when misaligned). The 128 f32 accumulators stay in registers. The epilogue, after the drain and
// a barrier, writes them to sC (in sB's memory) as 64 converted f16 pairs, and after a second
// barrier moves sC to C in 16-byte vectors.
// REQUIRES: ptxas
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 --resource-usage -o %t.80.ptx 2> %t.80.ru
// RUN: filecheck %s < %t.80.ptx
// RUN: filecheck %s --check-prefix=ASYNC < %t.80.ptx
// RUN: not grep -q cp.async.ca %t.80.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.80.ru
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -D PREFETCH=0 -D NARROW=0 -D BK=64 -D STAGES=3 --resource-usage -o %t.nopre.ptx 2> %t.nopre.ru
// RUN: filecheck %s --check-prefix=NOPRE < %t.nopre.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.nopre.ru
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_90a -D PREFETCH=0 --resource-usage -o %t.narrow.ptx 2> %t.narrow.ru
// RUN: filecheck %s --check-prefix=NARROW < %t.narrow.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.narrow.ru
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -D PREFETCH=0 -D MB=1 --resource-usage -o %t.narrow.nn.ptx 2> %t.narrow.nn.ru
// RUN: filecheck %s --check-prefix=PTXAS < %t.narrow.nn.ru
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_80 -D MA=1 -D MB=1 -D T=bf16 --resource-usage -o %t.tt.ptx 2> %t.tt.ru
// RUN: filecheck %s --check-prefix=TRANS < %t.tt.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.tt.ru
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_90a -D MA=1 -D MB=1 --resource-usage -o %t.tt90.ptx 2> %t.tt90.ru
// RUN: filecheck %s --check-prefix=TRANS < %t.tt90.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.tt90.ru
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_90a -D MB=1 --resource-usage -o %t.nn90.ptx 2> %t.nn90.ru
// RUN: filecheck %s --check-prefix=PTXAS < %t.nn90.ru
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit ptx --arch sm_90a --resource-usage -o %t.90.ptx 2> %t.90.ru
// RUN: filecheck %s < %t.90.ptx
// RUN: filecheck %s --check-prefix=PTXAS < %t.90.ru

// CHECK-NOT: .shared .align 16 .b8 __smem
// CHECK: .extern .shared .align 16 .b8 __tile_dynamic_smem[];
// CHECK-NOT: .shared .align 16 .b8 __smem
// CHECK-LABEL: .visible .entry gemm(
// CHECK-NOT: .local
// CHECK-COUNT-4: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-NOT: ldmatrix.sync.aligned.m8n8.x4.trans
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: cp.async.wait_group 0;
// CHECK: mov.u32 {{%r[0-9]+}}, %tid.x;
// CHECK: bar.sync 0;
// CHECK-COUNT-64: st.shared.b32
// CHECK-NOT: st.shared
// CHECK: bar.sync 0;
// CHECK: ld.shared.v4.b32
// CHECK: st.global.v4.b32
// CHECK-NOT: .local

// The fast loop holds no branch from its first cp.async to its back edge: plain cp.async (no
// source size), the commit, 96 mma.sync, the wait for all but 1 group and the barrier, 32
// mma.sync. The general loop waits the same; the drain waits for all.
// ASYNC: .extern .shared .align 16 .b8 __tile_dynamic_smem[];
// ASYNC-NOT: bar.sync
// ASYNC-COUNT-2: cp.async.commit_group;
// ASYNC-NOT: bar.sync
// ASYNC: cp.async.wait_group 1;
// ASYNC-NEXT: bar.sync 0;
// ASYNC-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// ASYNC: cp.async.cg.shared.global [{{%r[0-9+]+}}], [{{%rd[0-9]+}}], 16;
// ASYNC-NOT: {{bra|bar.sync|wait_group}}
// ASYNC: cp.async.commit_group;
// ASYNC-NOT: {{bra|bar.sync|wait_group}}
// ASYNC-COUNT-96: mma.sync.aligned.m16n8k16
// ASYNC-NOT: {{bra|bar.sync}}
// ASYNC: cp.async.wait_group 1;
// ASYNC-NEXT: bar.sync 0;
// ASYNC-NOT: {{bra|bar.sync|wait_group}}
// ASYNC-COUNT-32: mma.sync.aligned.m16n8k16
// ASYNC: cp.async.wait_group 1;
// ASYNC-NEXT: bar.sync 0;
// ASYNC-NOT: bar.sync
// ASYNC-NOT: cp.async.wait_group {{[2-9]}};
// ASYNC: cp.async.wait_group 0;
// ASYNC-NOT: cp.async

// PREFETCH = 0 (BK = 64, 3 stages): each iteration of either loop opens with the wait for all
// but STAGES - 2 = 1 groups and the barrier; 4 k-steps of 32 mma.sync follow.
// NOPRE: .extern .shared .align 16 .b8 __tile_dynamic_smem[];
// NOPRE-NOT: bar.sync
// NOPRE-COUNT-2: cp.async.commit_group;
// NOPRE-NOT: bar.sync
// NOPRE: cp.async.wait_group 1;
// NOPRE-NEXT: bar.sync 0;
// NOPRE-NOT: {{bra|bar.sync|wait_group}}
// NOPRE-COUNT-128: mma.sync.aligned.m16n8k16
// NOPRE: cp.async.wait_group 1;
// NOPRE-NEXT: bar.sync 0;
// NOPRE-NOT: bar.sync
// NOPRE-NOT: cp.async.wait_group {{[2-9]}};
// NOPRE: cp.async.wait_group 0;
// NOPRE-NOT: cp.async

// Without prefetch the example copies rows that are not 16-byte aligned with narrower cp.async
// (NARROW = 1 - PREFETCH): 8 and 4 bytes, L1-allocating (.ca, the only form of those sizes),
// zero-filling at the edges; rows aligned to 2 bytes only still go element by element. Still
// spill-free (checked above for sm_90a, and B N-major for sm_80). The default (PREFETCH = 1)
// has none of them.
// NARROW-DAG: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 8;
// NARROW-DAG: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 8, %r{{[0-9]+}};
// NARROW-DAG: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4;
// NARROW-DAG: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4, %r{{[0-9]+}};
// NARROW-DAG: ld.global.b16

// MN-major A and B (MA = MB = 1), at the defaults: for MN-major operands those are BK = 32 over
// 4 stages (waits leave STAGES - 2 = 2 groups in flight), spill-free on sm_80 (bf16) and sm_90a
// (f16), and so is B N-major alone (checked below). Every fragment load is an ldmatrix.trans
// (4 for A and 4 for B per k-step).
// TRANS-LABEL: .visible .entry gemm(
// TRANS-NOT: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// TRANS: cp.async.wait_group 2;
// TRANS-NOT: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// TRANS-COUNT-8: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// TRANS: mma.sync.aligned.m16n8k16.row.col.f32.{{(bf16.bf16|f16.f16)}}.f32
// TRANS: {{cvt.rn.bf16x2.f32|cvt.rn.f16x2.f32}}
// TRANS: st.global.v4.b32

// PTXAS: kernel {{ +}}registers{{ +}}spill stores B{{ +}}spill loads B{{ +}}shared B{{ +}}stack B{{ +}}barriers
// No static shared memory (ptxas's "N bytes smem"): all of it is dynamic. No spills, no stack.
// PTXAS-NEXT: gemm {{ +[0-9]+ +0 +0 +0 +0 +1$}}
