// The bank-conflict report of the examples, derived by hand below.
// RUN: tilec compile %repo/examples/transpose.tile --emit gpu -o %t --report banks 2>&1 | filecheck %s --check-prefix=TRANSPOSE
// RUN: tilec compile %repo/examples/softmax.tile --emit ptx -o %t --report banks 2>&1 | filecheck %s --check-prefix=SOFTMAX
// An --emit before gpu still gets the report (the compile runs on to gpu for it):
// RUN: tilec compile %repo/examples/softmax.tile --emit tile -o %t --report banks 2>&1 | filecheck %s --check-prefix=SOFTMAX
// An input past gpu has no gpu stage to read: a diagnostic, not a traceback.
// RUN: tilec compile %repo/examples/softmax.tile --emit nvvm -o %t.nvvm.mlir
// RUN: not tilec compile %t.nvvm.mlir --emit nvvm -o %t --report banks 2>&1 | filecheck %s --check-prefix=LATE

// transpose: s = Sw<3,2,6> o (64,64):(64,1) f32, 512 threads. Sw<3,2,6> xors bits 8-10 of the
// element offset 64*r + c (row bits 2-4) into bits 2-4 (which 16-byte chunk of a 32-word
// bank line): bank(r, c) = ((c/4 mod 8) xor (r/4 mod 8)) * 4 + c mod 4.
//
// Store (line 10, copy X -> s): chunks follow X's unit-stride mode (columns), 4 elements each;
// chunk v goes to thread v mod 512, so thread t holds row t/16, columns 4*(t%16)..+3. The
// swizzle keeps 4-element chunks whole, so both paths store 16 bytes per lane (a static
// shared tile needs no bounds check); a 16-byte access is served 8 lanes at a time, and 8
// consecutive chunks of one row land on 8 distinct 4-bank groups (the xor permutes chunk
// numbers within an aligned group of 8): conflict-free.
//
// Load (line 12, copy permute(s) -> Y): chunks follow Y's unit-stride mode (the row mode of
// s), and the shared side is read element by element, so the copy interleaves 4 rows of Y per
// warp: lane l handles Y row l%4 (= s column c0 + l%4) at Y columns 4*(l/4)..+3 (= s rows
// 4*(l/4)+e). Bank = ((c0/4) xor (l/4)) * 4 + l%4: 8 values of l/4 times 4 of l%4 = 32
// distinct banks: conflict-free. The warp still stores four whole 128-byte rows of Y.
// TRANSPOSE:      transpose.tile:12:3: shared store, 16 bytes/lane, 4 instructions: 1-way (conflict-free)
// TRANSPOSE-NEXT: transpose.tile:14:3: shared load, 4 bytes/lane, 16 instructions: 1-way (conflict-free)
// TRANSPOSE-NEXT: transpose: 2 shared accesses, 2 conflict-free, worst 1-way

// softmax: the cross-warp step of each reduction (256 threads at COLS = 4096, 8 warps) writes
// one f32 per thread at word t (banks 0-31 once per warp), then every thread reads words
// lane + 32*w for w = 0..7 (32 consecutive words per instruction): all conflict-free. Four reductions: the
// loop over whole tiles (max, sum) and the last tile's (max, sum).
// SOFTMAX:      softmax.tile:{{[0-9]+}}:{{[0-9]+}}: shared store, 4 bytes/lane, 1 instruction: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:{{[0-9]+}}:{{[0-9]+}}: shared load, 4 bytes/lane, 8 instructions: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:{{[0-9]+}}:{{[0-9]+}}: shared store, 4 bytes/lane, 1 instruction: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:{{[0-9]+}}:{{[0-9]+}}: shared load, 4 bytes/lane, 8 instructions: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:{{[0-9]+}}:{{[0-9]+}}: shared store, 4 bytes/lane, 1 instruction: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:{{[0-9]+}}:{{[0-9]+}}: shared load, 4 bytes/lane, 8 instructions: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:{{[0-9]+}}:{{[0-9]+}}: shared store, 4 bytes/lane, 1 instruction: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax.tile:{{[0-9]+}}:{{[0-9]+}}: shared load, 4 bytes/lane, 8 instructions: 1-way (conflict-free)
// SOFTMAX-NEXT: softmax: 8 shared accesses, 8 conflict-free, worst 1-way

// LATE: error: --report banks reads the 'gpu' stage, which this compile never produced
// LATE-NEXT: note: give it a .tile file or a stage at or before gpu (k.gpu.mlir)
