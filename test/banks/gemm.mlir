// The bank-conflict report of examples/gemm_sm80.tile: the cp.async writes into shared memory
// and the ldmatrix reads out of it (a 16-byte row per lane; each 8x8 matrix, lanes 8q..8q+7,
// is one 128-byte phase), in the defaults and the other layouts, and what it says without the
// swizzle.
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit gpu -o %t --report banks 2>&1 | filecheck %s --check-prefix=DEFAULT
// RUN: tilec compile %repo/examples/gemm_sm80.tile -D BK=32 -D STAGES=4 --emit gpu -o %t --report banks 2>&1 | filecheck %s --check-prefix=BK32
// RUN: tilec compile %repo/examples/gemm_sm80.tile -D MA=1 -D MB=1 --emit gpu -o %t --report banks 2>&1 | filecheck %s --check-prefix=TRANS
// RUN: tilec compile %repo/examples/gemm_sm80.tile -D PREFETCH=0 --emit gpu -o %t --report banks 2>&1 | filecheck %s --check-prefix=NARROW
// RUN: sed 's/let swz = swizzle<choose(BK \/ 64, 2, 3), 3, 3> o/let swz =/' %repo/examples/gemm_sm80.tile > %t.plain.tile
// RUN: tilec compile %t.plain.tile --emit gpu -o %t --report banks 2>&1 | filecheck %s --check-prefix=PLAIN
// RUN: sed 's/let sC = shared<T>(swizzle<3, 3, choose(BN \/ 128, 3, 4, 5)> o/let sC = shared<T>(/' %repo/examples/gemm_sm80.tile > %t.plainc.tile
// RUN: tilec compile %t.plainc.tile --emit gpu -o %t --report banks 2>&1 | filecheck %s --check-prefix=PLAINC

// Defaults (BK = 64, K-major, Sw<3,3,3> o (8,64):(64,1)): element (r, k) sits at byte
// 128 r + 16 ((k/8) xor (r mod 8)) + 2 (k mod 8). An ldmatrix phase is 8 lanes giving rows
// r0..r0+7 at one 16-byte column c: chunks c xor 0..7 are 8 distinct 16-byte bank groups, so
// conflict-free; a cp.async phase is 8 lanes writing the 8 chunks of one row: conflict-free.
// Lines 44/45 are the two copies: cp.async (inside the tensor and zero-filling at ragged
// edges), and the synchronous fallback's 2-byte stores when a source is not 16-byte aligned.
// Those chunks sit 16 bytes apart across lanes, so lanes l and l+8 share a bank: 4-way, on a
// path only misaligned tensors take (tile_async.scalar_copy says why it stores by element).
// Line 46 is the gemm: k-step 0's ldmatrix before the loop, then the rolling loads of the fast
// and the general loop (pipeline-steady-state's two versions).
// DEFAULT:      gemm_sm80.tile:46:5: shared cp.async, 16 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// DEFAULT-NEXT: gemm_sm80.tile:46:5: shared store, 2 bytes/lane, {{[0-9]+}} instructions: 4-way bank conflict
// DEFAULT-NEXT: gemm_sm80.tile:47:5: shared cp.async, 16 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// DEFAULT-NEXT: gemm_sm80.tile:47:5: shared store, 2 bytes/lane, {{[0-9]+}} instructions: 4-way bank conflict
// DEFAULT-NEXT: gemm_sm80.tile:48:5: shared ldmatrix, 16 bytes/lane, 72 instructions: 1-way (conflict-free)
// Lines 54 and 56 are the epilogue: the accumulators' f16 pairs into sC (Sw<3,3,5> o
// (128,256):(256,1); an atom's pair store is 8 rows × 4 lanes at one 16-byte column, which the
// swizzle spreads over 8 columns) and sC's rows out in 16-byte vectors.
// DEFAULT-NEXT: gemm_sm80.tile:56:3: shared store, 4 bytes/lane, 64 instructions: 1-way (conflict-free)
// DEFAULT-NEXT: gemm_sm80.tile:58:3: shared load, 16 bytes/lane, 32 instructions: 1-way (conflict-free)
// DEFAULT-NEXT: gemm: 7 shared accesses, 5 conflict-free, worst 4-way

// BK = 32: Sw<2,3,3> o (8,32):(32,1), 64-byte rows, two rows per 128-byte bank line: row r's
// chunk c sits in 16-byte slot 4 (r mod 2) + (c xor (r/2 mod 4)), 8 distinct slots for 8
// consecutive rows: conflict-free.
// BK32: gemm_sm80.tile:47:5: shared cp.async, 16 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// BK32: gemm_sm80.tile:48:5: shared ldmatrix, 16 bytes/lane, 40 instructions: 1-way (conflict-free)
// BK32: gemm: 7 shared accesses, 5 conflict-free, worst 4-way

// MN-major A and B: (128, 8):(1, 128) under Sw<3,3,4> (A) and (256, 8):(1, 256) under
// Sw<3,3,5> (B): an ldmatrix.trans phase reads 8 rows k0..k0+7 of 16 bytes at one m; the
// swizzle xors k mod 8 into the chunk: conflict-free.
// TRANS: gemm_sm80.tile:47:5: shared cp.async, 16 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// TRANS: gemm_sm80.tile:48:5: shared ldmatrix, 16 bytes/lane, 40 instructions: 1-way (conflict-free)
// TRANS: gemm: 7 shared accesses, 5 conflict-free, worst 4-way

// Without the swizzle every row starts at bank 0: the 8 rows of an ldmatrix phase are 8
// 16-byte words in the same 4 banks, 8-way; the cp.async rows stay whole and conflict-free.
// PLAIN: plain.tile:46:5: shared cp.async, 16 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// PLAIN: plain.tile:48:5: shared ldmatrix, 16 bytes/lane, 72 instructions: 8-way bank conflict (warp 0, phase 0: bank 0 <- lanes 0, 1, 2, 3, 4, 5, 6, 7)
// PLAIN: gemm: 7 shared accesses, 4 conflict-free, worst 8-way

// Without sC's swizzle the 8 rows of a pair store start at the same bank: 8-way.
// PLAINC: plainc.tile:56:3: shared store, 4 bytes/lane, 64 instructions: 8-way bank conflict
// PLAINC: plainc.tile:58:3: shared load, 16 bytes/lane, 32 instructions: 1-way (conflict-free)

// Without prefetch the example's copies are `narrow`: rows aligned to 8 or 4 bytes only are
// copied in pieces of that width, consecutive lanes on consecutive pieces, so each cp.async's
// 32 lanes write distinct banks (a lane per 16-byte chunk would put 4 pieces in a bank).
// NARROW:      gemm_sm80.tile:46:5: shared cp.async, 16 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// NARROW-NEXT: gemm_sm80.tile:46:5: shared cp.async, 8 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// NARROW-NEXT: gemm_sm80.tile:46:5: shared cp.async, 4 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// NARROW-NEXT: gemm_sm80.tile:46:5: shared store, 2 bytes/lane, {{[0-9]+}} instructions: 4-way bank conflict
// NARROW-NEXT: gemm_sm80.tile:47:5: shared cp.async, 16 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// NARROW-NEXT: gemm_sm80.tile:47:5: shared cp.async, 8 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
// NARROW-NEXT: gemm_sm80.tile:47:5: shared cp.async, 4 bytes/lane, {{[0-9]+}} instructions: 1-way (conflict-free)
