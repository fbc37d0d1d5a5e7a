// Hand-written gpu-stage kernels whose bank behaviour is known, so the analysis can fail.
// Each CHECK sits on the line before the access it describes; each kernel ends in a summary.
// RUN: tilec compile %s --emit gpu -o %t --report banks 2>&1 | filecheck %s
// RUN: tilec compile %s --emit gpu --report banks 2>/dev/null | filecheck %s --check-prefix=IR

// The report goes to stderr; the requested --emit output still goes to stdout.
// IR: gpu.module @kernels

gpu.module @kernels {
  llvm.mlir.global internal @smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<2048 x f32>

  gpu.func @column(%out: !llvm.ptr<1>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %base = llvm.mlir.addressof @smem : !llvm.ptr<3>
    %c32 = arith.constant 32 : index
    %c33 = arith.constant 33 : index
    %t = gpu.thread_id x
    %row = arith.muli %t, %c32 : index
    %i = arith.index_cast %row : index to i64
    %p = llvm.getelementptr %base[%i] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
    // A 32x32 f32 tile without swizzle, read by column: lane t reads word 32*t; all 32 words
    // sit in bank 0: 32-way.
    // CHECK: cases.gpu.mlir:[[# @LINE + 1]]:10: shared load, 4 bytes/lane, 1 instruction: 32-way bank conflict (warp 0, phase 0: bank 0 <- lanes 0, 1, 2, 3, 4, 5, 6, 7, ...)
    %v = llvm.load %p : !llvm.ptr<3> -> f32
    %padded = arith.muli %t, %c33 : index
    %j = arith.index_cast %padded : index to i64
    %q = llvm.getelementptr %base[%j] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
    // Rows padded to 33 words move lane t to bank t: conflict-free.
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:10: shared load, 4 bytes/lane, 1 instruction: 1-way (conflict-free)
    %w = llvm.load %q : !llvm.ptr<3> -> f32
    // Every lane reads word 0: one word, a broadcast, conflict-free.
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:10: shared load, 4 bytes/lane, 1 instruction: 1-way (conflict-free)
    %s = llvm.load %base : !llvm.ptr<3> -> f32
    gpu.return
  }
  // CHECK-NEXT: column: 3 shared accesses, 2 conflict-free, worst 32-way

  // Vectors are served in phases of 128 bytes: 16-byte lanes in 4 phases of 8 lanes, 8-byte
  // lanes in 2 phases of 16.
  gpu.func @vectors() kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %base = llvm.mlir.addressof @smem : !llvm.ptr<3>
    %t = gpu.thread_id x
    %i = arith.index_cast %t : index to i64
    %c1 = arith.constant 1 : i64
    %i2 = arith.shli %i, %c1 : i64
    %p = llvm.getelementptr %base[%i] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, vector<4xf32>
    // Contiguous 16-byte vectors: each phase covers the 32 banks once.
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:10: shared load, 16 bytes/lane, 1 instruction: 1-way (conflict-free)
    %v = llvm.load %p : !llvm.ptr<3> -> vector<4xf32>
    %q = llvm.getelementptr %base[%i2] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, vector<4xf32>
    // Every other 16-byte vector: a phase of 8 lanes spans 256 bytes, each bank twice (lanes 0
    // and 4 both start in bank 0): 2-way.
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:10: shared load, 16 bytes/lane, 1 instruction: 2-way bank conflict (warp 0, phase 0: bank 0 <- lanes 0, 4)
    %w = llvm.load %q : !llvm.ptr<3> -> vector<4xf32>
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:5: shared store, 16 bytes/lane, 1 instruction: 1-way (conflict-free)
    llvm.store %v, %p : vector<4xf32>, !llvm.ptr<3>
    %r = llvm.getelementptr %base[%i2] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, vector<2xf32>
    // 8-byte lanes at a 16-byte stride: the 16 lanes of a phase span 256 bytes: 2-way (lanes 0
    // and 8); the other half-warp is another phase and adds nothing to it.
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:10: shared load, 8 bytes/lane, 1 instruction: 2-way bank conflict (warp 0, phase 0: bank 0 <- lanes 0, 8)
    %x = llvm.load %r : !llvm.ptr<3> -> vector<2xf32>
    gpu.return
  }
  // CHECK-NEXT: vectors: 4 shared accesses, 2 conflict-free, worst 2-way

  // Loop indices are bound to each of the first iterations in turn; two warps are checked.
  gpu.func @loop() kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %base = llvm.mlir.addressof @smem : !llvm.ptr<3>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %t = gpu.thread_id x
    %lane = arith.remui %t, %c32 : index
    %end = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %c0) -> (index) {
      %row = arith.muli %lane, %c32 : index
      %a = arith.addi %row, %k : index
      %ai = arith.index_cast %a : index to i64
      %p = llvm.getelementptr %base[%ai] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
      // Word 32*lane + k: 32-way whatever k is.
      // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:12: shared load, 4 bytes/lane, 1 instruction: 32-way bank conflict
      %v = llvm.load %p : !llvm.ptr<3> -> f32
      %col = arith.muli %k, %c32 : index
      %b = arith.addi %lane, %col : index
      %bi = arith.index_cast %b : index to i64
      %q = llvm.getelementptr %base[%bi] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
      // Word lane + 32*k: conflict-free whatever k is.
      // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:12: shared load, 4 bytes/lane, 1 instruction: 1-way (conflict-free)
      %w = llvm.load %q : !llvm.ptr<3> -> f32
      %ci = arith.index_cast %acc : index to i64
      %r = llvm.getelementptr %base[%ci] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
      // A value carried around the loop is not bound: unknown.
      // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:12: shared load, 4 bytes/lane, 1 instruction: unknown: the address depends on a value carried around an scf.for
      %x = llvm.load %r : !llvm.ptr<3> -> f32
      %next = arith.addi %acc, %c1 : index
      scf.yield %next : index
    }
    gpu.return
  }
  // CHECK-NEXT: loop: 3 shared accesses, 1 conflict-free, worst 32-way, 1 unknown

  // Block ids, kernel arguments and values the interpreter cannot see make an access unknown:
  // a located line, never a guess and never a traceback.
  gpu.func @runtime(%n: i64) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
    %base = llvm.mlir.addressof @smem : !llvm.ptr<3>
    %zero = arith.constant 0.0 : f32
    %b = gpu.block_id x
    %bi = arith.index_cast %b : index to i64
    %p = llvm.getelementptr %base[%bi] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:5: shared store, 4 bytes/lane, 1 instruction: unknown: the address depends on 'gpu.block_id'
    llvm.store %zero, %p : f32, !llvm.ptr<3>
    %q = llvm.getelementptr %base[%n] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:5: shared store, 4 bytes/lane, 1 instruction: unknown: the address depends on a kernel argument (a runtime value)
    llvm.store %zero, %q : f32, !llvm.ptr<3>
    // An 8-byte broadcast: conflict-free.
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:10: shared load, 8 bytes/lane, 1 instruction: 1-way (conflict-free)
    %k = llvm.load %base : !llvm.ptr<3> -> i64
    %r = llvm.getelementptr %base[%k] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
    // CHECK-NEXT: cases.gpu.mlir:[[# @LINE + 1]]:10: shared load, 4 bytes/lane, 1 instruction: unknown: the address depends on 'llvm.load'
    %v = llvm.load %r : !llvm.ptr<3> -> f32
    gpu.return
  }
  // CHECK-NEXT: runtime: 4 shared accesses, 1 conflict-free, worst 1-way, 3 unknown
}
