// The bank-conflict report of the examples, derived by hand below.
// RUN: tilec compile %repo/examples/transpose.tile --emit gpu -o %t --report banks 2>&1 | filecheck %s --check-prefix=TRANSPOSE
// RUN: tilec compile %repo/examples/softmax.tile --emit ptx -o %t --report banks 2>&1 | filecheck %s --check-prefix=SOFTMAX
// An --emit before gpu still gets the report (the compile runs on to gpu for it):
// RUN: tilec compile %repo/examples/softmax.tile --emit tile -o %t --report banks 2>&1 | filecheck %s --check-prefix=SOFTMAX
// An input past gpu has no gpu stage to read: a diagnostic, not a traceback.
// RUN: tilec compile %repo/examples/softmax.tile --emit nvvm -o %t.nvvm.mlir
// RUN: not tilec compile %t.nvvm.mlir --emit nvvm -o %t --report banks 2>&1 | filecheck %s --check-prefix=LATE

// transpose: s = Sw<5,0,6> o (64,64):(64,1) f32, 256 threads. Sw<5,0,6> xors bits 6-10 of the
// element offset 64*r + c into bits 0-4, so bank(r, c) = (c mod 32) xor (r mod 32).
//
// Store (line 8, copy X -> s): chunks follow X's unit-stride mode (columns), 4 elements each;
// chunk v goes to thread v mod 256, so thread t holds row t/16, columns 4*(t%16)+e. The shared
// side gets 1-wide stores (the swizzle keeps groups of 2^0 elements intact), one per e:
//
//   lanes 0-15  (row 0):  columns 0,4,..,28 | 32,36,..,60  -> banks 0,4,..,28 twice
//   lanes 16-31 (row 1):  the same columns                 -> banks 1,5,..,29 twice
//
// Lane 0 (word 0) and lane 8 (word 32) share bank 0: the swizzle varies with the row, which is
// fixed within a half-warp, and column bit 5 is not part of it: 2-way.
//
// Load (line 10, copy permute(s) -> Y): chunks follow Y's unit-stride mode, which is the
// column mode of s: thread t reads column t/16 of rows 4*(t%16)+e. Lanes 0 and 8 read rows 0
// and 32, whose xor terms (r mod 32) are equal: bank 0 twice: 2-way. The swizzle separates 32
// consecutive rows, but a warp reads rows 4 apart, spanning 64.
//
// Both paths (in-bounds fast path and guarded fallback) lower each copy to 16 scalar accesses.
// TRANSPOSE:      transpose.tile:8:3: shared store, 4 bytes/lane, 32 instructions: 2-way bank conflict (warp 0, phase 0: bank 0 <- lanes 0, 8)
// TRANSPOSE-NEXT: transpose.tile:10:3: shared load, 4 bytes/lane, 32 instructions: 2-way bank conflict (warp 0, phase 0: bank 0 <- lanes 0, 8)
// TRANSPOSE-NEXT: transpose: 2 shared accesses, 0 conflict-free, worst 2-way

// softmax: the cross-warp step of each reduction (128 threads, 4 warps) writes one f32 per
// thread at word t (banks 0-31 once per warp), then every thread reads words lane + 32*w for
// w = 0..3 (32 consecutive words per instruction): all conflict-free.
// SOFTMAX:      softmax.tile:8:19: shared store, 4 bytes/lane, 1 instruction: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:8:19: shared load, 4 bytes/lane, 4 instructions: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:9:13: shared store, 4 bytes/lane, 1 instruction: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:9:13: shared load, 4 bytes/lane, 4 instructions: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax: 4 shared accesses, 4 conflict-free, worst 1-way

// LATE: error: --report banks reads the 'gpu' stage, which this compile never produced
// LATE-NEXT: note: give it a .tile file or a stage at or before gpu (k.gpu.mlir)
