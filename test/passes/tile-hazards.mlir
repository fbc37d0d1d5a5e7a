// tile-hazards: a shared buffer read by threads other than those that wrote it, or written
// over what other threads may still read, with no barrier between, is a located error (the
// .bad file); these kernels order every access and leave the pass as they came: it changes
// nothing.
// RUN: tile-opt -p tile-hazards --split-input-file %s | filecheck %s
// RUN: tile-opt -p tile-hazards --split-input-file --verify-diagnostics %s.bad

// A barrier between the write and the read; and in the loop, a barrier before the copy
// refills the buffer the previous iteration read.
// CHECK-LABEL: func.func @ordered(
// CHECK:       "tile.copy"(%{{.*}}, %[[S:.*]]) {atom = "auto"}
// CHECK-NEXT:  "tile.barrier"()
// CHECK-NEXT:  "tile.copy"(%[[S]], %{{.*}}) {atom = "auto"}
// CHECK:       scf.for
// CHECK-NEXT:  "tile.barrier"()
// CHECK-NEXT:  "tile.copy"
// CHECK-NEXT:  "tile.barrier"()
// CHECK-NEXT:  "tile.load"
func.func @ordered(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %0 = "tile.make_tensor"(%arg0, %arg2, %arg2, %arg2) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg2, %arg2, %arg2) {name = "Y"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %s = "tile.alloc_shared"() {name = "s"} : () -> !tile.tensor<f32, "shared", "(32,32):(32,1)">
  %2 = "tile.local_tile"(%0, %arg2, %arg2) {coord = "(?,?)", tile = array<i64: 32, 32>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(32,32):(?,1)">
  %3 = "tile.local_tile"(%1, %arg2, %arg2) {coord = "(?,?)", tile = array<i64: 32, 32>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(32,32):(?,1)">
  "tile.copy"(%2, %s) {atom = "auto"} : (!tile.tensor<f32, "global", "(32,32):(?,1)">, !tile.tensor<f32, "shared", "(32,32):(32,1)">) -> ()
  "tile.barrier"() : () -> ()
  "tile.copy"(%s, %3) {atom = "auto"} : (!tile.tensor<f32, "shared", "(32,32):(32,1)">, !tile.tensor<f32, "global", "(32,32):(?,1)">) -> ()
  scf.for %i = %c0 to %arg2 step %c1 {
    "tile.barrier"() : () -> ()
    "tile.copy"(%2, %s) {atom = "auto"} : (!tile.tensor<f32, "global", "(32,32):(?,1)">, !tile.tensor<f32, "shared", "(32,32):(32,1)">) -> ()
    "tile.barrier"() : () -> ()
    %4 = "tile.load"(%s) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "shared", "(32,32):(32,1)">) -> !tile.tensor<f32, "register", "(32,32):(32,1)">
    "tile.store"(%4, %3) : (!tile.tensor<f32, "register", "(32,32):(32,1)">, !tile.tensor<f32, "global", "(32,32):(?,1)">) -> ()
  }
  return
}

// -----

// The same threads: a cp.async copy partitions its tile as a load of the buffer spreads it
// (16-byte chunks along the unit-stride mode), so each thread reads only what it copied
// (tile-async-waits adds the wait); no barrier is needed. A store and a load back of the same
// spread likewise.
// CHECK-LABEL: func.func @same_threads(
// CHECK:       "tile.copy"
// CHECK-NEXT:  "tile.load"
// CHECK-NEXT:  "tile.store"
// CHECK-NEXT:  "tile.load"
func.func @same_threads(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 32, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %s = "tile.alloc_shared"() {name = "sX"} : () -> !tile.tensor<f16, "shared", "(1,256):(1,1)">
  %1 = "tile.local_tile"(%0, %arg1) {coord = "(?,0)", tile = array<i64: 1, 256>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,256):(?,1)">
  "tile.copy"(%1, %s) {atom = "cp_async.cg.16"} : (!tile.tensor<f16, "global", "(1,256):(?,1)">, !tile.tensor<f16, "shared", "(1,256):(1,1)">) -> ()
  %2 = "tile.load"(%s) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "shared", "(1,256):(1,1)">) -> !tile.tensor<f16, "register", "(1,256):(1,1)">
  "tile.store"(%2, %s) : (!tile.tensor<f16, "register", "(1,256):(1,1)">, !tile.tensor<f16, "shared", "(1,256):(1,1)">) -> ()
  %3 = "tile.load"(%s) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "shared", "(1,256):(1,1)">) -> !tile.tensor<f16, "register", "(1,256):(1,1)">
  return
}

// -----

// A gemm outside a pipeline lowers between barriers of its own (convert-tile-mma): the copies
// before it and the store over sB's memory (sC reuses it) after it are ordered. A
// non-injective view that is only read (a broadcast of sA's first row) is legal.
// CHECK-LABEL: func.func @gemm_orders(
// CHECK:       "tile.gemm"
// CHECK:       "tile.store"
// CHECK:       "tile.load"
func.func @gemm_orders(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "A"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 64, 32>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(64,32):(?,1)">
  %sa = "tile.alloc_shared"() {name = "sA"} : () -> !tile.tensor<f16, "shared", "(64,32):(32,1)">
  %sb = "tile.alloc_shared"() {name = "sB"} : () -> !tile.tensor<f16, "shared", "(64,32):(32,1)">
  "tile.copy"(%1, %sa) {atom = "auto"} : (!tile.tensor<f16, "global", "(64,32):(?,1)">, !tile.tensor<f16, "shared", "(64,32):(32,1)">) -> ()
  "tile.copy"(%1, %sb) {atom = "auto"} : (!tile.tensor<f16, "global", "(64,32):(?,1)">, !tile.tensor<f16, "shared", "(64,32):(32,1)">) -> ()
  %m = "tile.tiled_mma"() : () -> !tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">
  %acc = "tile.fragment"(%m) {block_shape = array<i64: 64, 64>} : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  "tile.gemm"(%m, %sa, %sb, %acc) : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">, !tile.tensor<f16, "shared", "(64,32):(32,1)">, !tile.tensor<f16, "shared", "(64,32):(32,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
  %sc = "tile.alloc_shared"() {name = "sC", reuse = "sB"} : () -> !tile.tensor<f32, "shared", "(64,64):(64,1)">
  "tile.store"(%acc, %sc) : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f32, "shared", "(64,64):(64,1)">) -> ()
  %row = "tile.alloc_shared"() {name = "sRow", reuse = "sA"} : () -> !tile.tensor<f16, "shared", "(64,32):(0,1)">
  %2 = "tile.load"(%row) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "shared", "(64,32):(0,1)">) -> !tile.tensor<f16, "register", "(64,32):(32,1)">
  return
}

// -----

// A warp-specialised kernel: the buffers its copy<tma> fill are tile-ring's everywhere in the
// region, so Q's copy outside the pipelined loop (the once ring) and the consumers' gemm reading
// it in theirs are ordered by its barriers, as K's and V's are.
// CHECK-LABEL: func.func @once(
// CHECK: "tile.copy"(%{{.*}}, %[[Q:.*]]) {atom = "tma"}
// CHECK: "tile.gemm"(%{{.*}}, %[[Q]],
func.func @once(%q: !llvm.ptr, %k: !llvm.ptr, %v: !llvm.ptr, %o: !llvm.ptr, %m: index, %n: index, %kt: index) attributes {tile.kernel, tile.target = "sm_90a", tile.threads = array<i64: 384, 1, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %Q = "tile.make_tensor"(%q, %m, %c64, %c64) {name = "Q"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %K = "tile.make_tensor"(%k, %n, %c64, %c64) {name = "K"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %V = "tile.make_tensor"(%v, %n, %c64, %c64) {name = "V"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %O = "tile.make_tensor"(%o, %m, %c64, %c64) {name = "O"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,64):(?,1)">
  %sQ = "tile.alloc_shared"() {name = "sQ"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">
  %sK = "tile.alloc_shared"() {name = "sK"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %sV = "tile.alloc_shared"() {name = "sV"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">
  %qk = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">
  %pv = "tile.tiled_mma"() : () -> !tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">
  scf.execute_region {
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %tq = "tile.local_tile"(%Q, %bx) {coord = "(?,0)", tile = array<i64: 128, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(128,64):(?,1)">
      "tile.copy"(%tq, %sQ) {atom = "tma"} : (!tile.tensor<f16, "global", "(128,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">) -> ()
      scf.for %j = %c0 to %kt step %c1 {
        %tk = "tile.local_tile"(%K, %j) {coord = "(?,0)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
        "tile.copy"(%tk, %sK) {atom = "tma"} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
        %tv = "tile.local_tile"(%V, %j) {coord = "(?,0)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
        "tile.copy"(%tv, %sV) {atom = "tma"} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> ()
      } {tile.stages = 2 : i64}
      scf.yield
    } {tile.registers = 40 : i64, tile.role = "producer", tile.warpgroups = array<i64: 0>}
    scf.execute_region {
      %bx = "tile.block_id"() {dim = 0 : i64} : () -> index
      %acc = "tile.fragment"(%pv) {block_shape = array<i64: 128, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">
      "tile.fill"(%acc) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      scf.for %j = %c0 to %kt step %c1 {
        %s = "tile.fragment"(%qk) {block_shape = array<i64: 128, 64>} : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">) -> !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">
        "tile.fill"(%s) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
        "tile.gemm"(%qk, %sQ, %sK, %s) : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
        %p = "tile.convert"(%s) : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> !tile.tensor<f16, "register", "(32,1,1):(1,32,32)">
        %vt = "tile.permute"(%sV) {perm = array<i64: 1, 0>} : (!tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(64,1)">) -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(1,64)">
        "tile.gemm"(%pv, %p, %vt, %acc) : (!tile.mma<"sm90.wgmma_64x64x16.f32.f16.f16", "(2,1,1)">, !tile.tensor<f16, "register", "(32,1,1):(1,32,32)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (64,64):(1,64)">, !tile.tensor<f32, "register", "(32,1,1):(1,32,32)">) -> ()
      } {tile.stages = 2 : i64}
      %to = "tile.local_tile"(%O, %bx) {coord = "(?,0)", tile = array<i64: 128, 64>} : (!tile.tensor<f32, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f32, "global", "(128,64):(?,1)">
      "tile.store"(%acc, %to) : (!tile.tensor<f32, "register", "(32,1,1):(1,32,32)">, !tile.tensor<f32, "global", "(128,64):(?,1)">) -> ()
      scf.yield
    } {tile.registers = 232 : i64, tile.role = "consumer", tile.warpgroups = array<i64: 1, 2>}
    scf.yield
  } {tile.warp_specialize}
  return
}
