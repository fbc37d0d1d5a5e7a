// convert-tile-to-gpu: views become pointer + index math, block-level accesses 16-byte vector
// loads/stores under a uniform in-bounds-and-aligned test (predicated scalars otherwise),
// shared buffers addrspace-3 globals, reductions shuffles. A swizzled address stays layout IR
// (a `layout.apply` of the swizzle as a function of the buffer's elements) until
// convert-layout-to-arith makes it xor/shift/and, as in the default pipeline.
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu,convert-layout-to-arith --split-input-file %s | filecheck %s
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu --split-input-file %s | filecheck %s --check-prefix=APPLY
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu --split-input-file --verify-diagnostics %s.bad

// vadd: 4096 f32 over 256 threads = 4 chunks of vector<4xf32> per thread and operand. The
// edge version: where every 16-byte run is wholly inside N or wholly past it (N a multiple of
// 4, the base aligned), one predicated vector load a run; else one predicated 4-byte load an
// element (always possible for f32, so no branch per element remains).
// CHECK-LABEL: func.func @vadd(
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[X:.*]] = llvm.addrspacecast %arg0 : !llvm.ptr to !llvm.ptr<1>
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: %[[IN:.*]] = arith.cmpi slt, %{{.*}}, %arg3 : index
// CHECK: %[[AL:.*]] = arith.cmpi eq
// CHECK: %[[FAST:.*]] = arith.andi %[[IN]], %[[AL]] : i1
// CHECK: scf.if %[[FAST]] -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: } else {
// CHECK: arith.andi %{{.*}}, %c3{{.*}} : index
// CHECK: scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-4: llvm.inline_asm has_side_effects "@$5 ld.global.v4.b32 {$0, $1, $2, $3}, [$4];"
// CHECK: } else {
// CHECK-COUNT-16: llvm.inline_asm has_side_effects "@$2 ld.global.b32 $0, [$1];"
// CHECK-NOT: scf.if %{{.*}} -> (f32)
// CHECK-COUNT-16: arith.addf
// CHECK: scf.if
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK: } else {
// CHECK: scf.if
// CHECK-COUNT-4: llvm.inline_asm has_side_effects "@$5 st.global.v4.b32 [$0], {$1, $2, $3, $4};"
// CHECK: } else {
// CHECK-COUNT-16: llvm.inline_asm has_side_effects "@$2 st.global.b32 [$0], $1;"
// CHECK-NOT: tile.
func.func @vadd(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: index) attributes {tile.kernel, tile.threads = array<i64: 256, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg3) {name = "x"} : (!llvm.ptr, index) -> !tile.tensor<f32, "global", "(?):(1)">
  %1 = "tile.make_tensor"(%arg1, %arg3) {name = "y"} : (!llvm.ptr, index) -> !tile.tensor<f32, "global", "(?):(1)">
  %2 = "tile.make_tensor"(%arg2, %arg3) {name = "out"} : (!llvm.ptr, index) -> !tile.tensor<f32, "global", "(?):(1)">
  %3 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %4 = "tile.local_tile"(%0, %3) {coord = "(?)", tile = array<i64: 4096>} : (!tile.tensor<f32, "global", "(?):(1)">, index) -> !tile.tensor<f32, "global", "4096:1">
  %5 = "tile.load"(%4) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "4096:1">) -> !tile.tensor<f32, "register", "4096:1">
  %7 = "tile.local_tile"(%1, %3) {coord = "(?)", tile = array<i64: 4096>} : (!tile.tensor<f32, "global", "(?):(1)">, index) -> !tile.tensor<f32, "global", "4096:1">
  %8 = "tile.load"(%7) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "4096:1">) -> !tile.tensor<f32, "register", "4096:1">
  %9 = "tile.binary"(%5, %8) {op = "add"} : (!tile.tensor<f32, "register", "4096:1">, !tile.tensor<f32, "register", "4096:1">) -> !tile.tensor<f32, "register", "4096:1">
  %11 = "tile.local_tile"(%2, %3) {coord = "(?)", tile = array<i64: 4096>} : (!tile.tensor<f32, "global", "(?):(1)">, index) -> !tile.tensor<f32, "global", "4096:1">
  "tile.store"(%9, %11) : (!tile.tensor<f32, "register", "4096:1">, !tile.tensor<f32, "global", "4096:1">) -> ()
  return
}

// -----

// transpose: a swizzled shared buffer (an addrspace-3 global), 16-byte global accesses on
// both sides, scalar shared accesses through offset ^ ((offset & 992) >> 5), one barrier.
// CHECK: llvm.mlir.global internal @__smem_transpose_s() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<1024 x f32>
// CHECK-LABEL: func.func @transpose(
// CHECK: llvm.mlir.addressof @__smem_transpose_s : !llvm.ptr<3>
// CHECK: scf.if
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// APPLY-LABEL: func.func @transpose(
// APPLY: %[[SW:.*]] = "layout.make"() : () -> !layout.layout<"Sw<5,0,5> o 0 o 1024:1">
// APPLY: "layout.apply"(%[[SW]], %{{.*}}) : (!layout.layout<"Sw<5,0,5> o 0 o 1024:1">, index) -> index
// APPLY-NOT: arith.xori
// APPLY: gpu.barrier
// CHECK: %[[HI:.*]] = arith.andi %{{.*}}, %c992{{.*}} : index
// CHECK: %[[SH:.*]] = arith.shrui %[[HI]], %c5{{.*}} : index
// CHECK: arith.xori %{{.*}}, %[[SH]] : index
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
func.func @transpose(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index, %arg3: index) attributes {tile.kernel, tile.threads = array<i64: 256, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2, %arg3, %arg3) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg3, %arg2, %arg2) {name = "Y"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %2 = "tile.alloc_shared"() {name = "s"} : () -> !tile.tensor<f32, "shared", "Sw<5,0,5> o 0 o (32,32):(32,1)">
  %3 = "tile.block_id"() {dim = 1 : i64} : () -> index
  %4 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %5 = "tile.local_tile"(%0, %3, %4) {coord = "(?,?)", tile = array<i64: 32, 32>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(32,32):(?,1)">
  "tile.copy"(%5, %2) {atom = "auto"} : (!tile.tensor<f32, "global", "(32,32):(?,1)">, !tile.tensor<f32, "shared", "Sw<5,0,5> o 0 o (32,32):(32,1)">) -> ()
  "tile.barrier"() : () -> ()
  %6 = "tile.permute"(%2) {perm = array<i64: 1, 0>} : (!tile.tensor<f32, "shared", "Sw<5,0,5> o 0 o (32,32):(32,1)">) -> !tile.tensor<f32, "shared", "Sw<5,0,5> o 0 o (32,32):(1,32)">
  %9 = "tile.local_tile"(%1, %4, %3) {coord = "(?,?)", tile = array<i64: 32, 32>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(32,32):(?,1)">
  "tile.copy"(%6, %9) {atom = "auto"} : (!tile.tensor<f32, "shared", "Sw<5,0,5> o 0 o (32,32):(1,32)">, !tile.tensor<f32, "global", "(32,32):(?,1)">) -> ()
  return
}

// -----

// A row max over 1024 f16 on 128 threads: vector<8xf16> loads, in-thread max, five butterfly
// shuffles, then the four warps through shared memory; the result broadcasts to the sub.
// CHECK-LABEL: func.func @rowmax(
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xf16>
// CHECK-COUNT-8: arith.extf %{{.*}} : f16 to f32
// CHECK-COUNT-7: arith.maximumf
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-COUNT-8: arith.subf
// CHECK-COUNT-8: math.exp
func.func @rowmax(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index, %arg3: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2, %arg3, %arg3) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %2 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %3 = "tile.local_tile"(%0, %2) {coord = "(?,0)", tile = array<i64: 1, 1024>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,1024):(?,1)">
  %4 = "tile.load"(%3) {other = 0xFC00 : f16} : (!tile.tensor<f16, "global", "(1,1024):(?,1)">) -> !tile.tensor<f16, "register", "(1,1024):(1,1)">
  %5 = "tile.convert"(%4) : (!tile.tensor<f16, "register", "(1,1024):(1,1)">) -> !tile.tensor<f32, "register", "(1,1024):(1,1)">
  %6 = "tile.reduce"(%5) {kind = "max", mode = 1 : i64} : (!tile.tensor<f32, "register", "(1,1024):(1,1)">) -> !tile.tensor<f32, "register", "(1,1):(1,1)">
  %7 = "tile.binary"(%5, %6) {op = "sub"} : (!tile.tensor<f32, "register", "(1,1024):(1,1)">, !tile.tensor<f32, "register", "(1,1):(1,1)">) -> !tile.tensor<f32, "register", "(1,1024):(1,1)">
  %8 = "tile.unary"(%7) {op = "exp"} : (!tile.tensor<f32, "register", "(1,1024):(1,1)">) -> !tile.tensor<f32, "register", "(1,1024):(1,1)">
  %12 = "tile.local_tile"(%0, %2) {coord = "(?,0)", tile = array<i64: 1, 1024>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(1,1024):(?,1)">
  "tile.store"(%8, %12) : (!tile.tensor<f32, "register", "(1,1024):(1,1)">, !tile.tensor<f16, "global", "(1,1024):(?,1)">) -> ()
  return
}

// -----

// epilogue: acc + a bias row (M stride 0) loaded like the 32×32 accumulator (2 atoms per
// thread). The load moves to the store: one test (the store's tile and the bias's, in bounds and
// 4-byte aligned) picks the fast path, where each chunk loads its bias pairs (both rows of an
// atom read the same address), adds, stores two f16 pairs, and only then loads the next chunk.
// CHECK-LABEL: func.func @epilogue(
// CHECK: scf.if %{{.*}} {
// CHECK: %[[P:.*]] = arith.addi %[[ROW:.*]], %[[COL:.*]] : index
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> vector<2xf16>
// CHECK: arith.addf
// CHECK: arith.addi %[[ROW]], %[[COL]] : index
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> vector<2xf16>
// CHECK: arith.truncf
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xf16>, !llvm.ptr<1>
// CHECK-NOT: llvm.load
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xf16>, !llvm.ptr<1>
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<1> -> vector<2xf16>
// CHECK: } else {
// CHECK: scf.if %{{.*}} -> (f16) {
// CHECK: llvm.load %{{.*}} : !llvm.ptr<1> -> f16
// CHECK: llvm.store %{{.*}}, %{{.*}} : f16, !llvm.ptr<1>
// CHECK-NOT: tile.
func.func @epilogue(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index, %arg3: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2, %arg3, %arg3) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg2, %arg3) {name = "bias"} : (!llvm.ptr, index, index) -> !tile.tensor<f16, "global", "(?,?):(0,1)">
  %2 = "tile.tiled_mma"() : () -> !tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">
  %3 = "tile.fragment"(%2) {block_shape = array<i64: 32, 32>} : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">) -> !tile.tensor<f32, "register", "(4,1,2):(1,4,4)">
  "tile.fill"(%3) {value = 1.000000e+00 : f32} : (!tile.tensor<f32, "register", "(4,1,2):(1,4,4)">) -> ()
  %4 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %5 = "tile.block_id"() {dim = 1 : i64} : () -> index
  %6 = "tile.local_tile"(%0, %4, %5) {coord = "(?,?)", tile = array<i64: 32, 32>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(32,32):(?,1)">
  %7 = "tile.local_tile"(%1, %4, %5) {coord = "(?,?)", tile = array<i64: 32, 32>} : (!tile.tensor<f16, "global", "(?,?):(0,1)">, index, index) -> !tile.tensor<f16, "global", "(32,32):(0,1)">
  %8 = "tile.load"(%7, %3) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "global", "(32,32):(0,1)">, !tile.tensor<f32, "register", "(4,1,2):(1,4,4)">) -> !tile.tensor<f16, "register", "(4,1,2):(1,4,4)">
  %9 = "tile.convert"(%8) : (!tile.tensor<f16, "register", "(4,1,2):(1,4,4)">) -> !tile.tensor<f32, "register", "(4,1,2):(1,4,4)">
  %10 = "tile.binary"(%3, %9) {op = "add"} : (!tile.tensor<f32, "register", "(4,1,2):(1,4,4)">, !tile.tensor<f32, "register", "(4,1,2):(1,4,4)">) -> !tile.tensor<f32, "register", "(4,1,2):(1,4,4)">
  "tile.store"(%10, %6) : (!tile.tensor<f32, "register", "(4,1,2):(1,4,4)">, !tile.tensor<f16, "global", "(32,32):(?,1)">) -> ()
  return
}

// -----

// A reduced tensor stored: column sums of a (4, 512) f32 tile over 128 threads. Each thread
// holds 4 columns of all 4 rows (chunk i is row i), so the sum stays in the thread (12 adds,
// no shuffle, no barrier), and only chunk 0's thread writes: one 8-byte vector of 4 f16 in the
// fast path, 4 predicated scalars in the other.
// CHECK-LABEL: func.func @colsum(
// CHECK-COUNT-12: arith.addf
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: gpu.barrier
// CHECK: scf.if
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<4xf16>, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK: } else {
// CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} : f16, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK: return
func.func @colsum(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2, %arg2) {name = "W"} : (!llvm.ptr, index, index) -> !tile.tensor<f32, "global", "(4,?):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg2) {name = "C"} : (!llvm.ptr, index) -> !tile.tensor<f16, "global", "(?):(1)">
  %2 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %3 = "tile.local_tile"(%0, %2) {coord = "(0,?)", tile = array<i64: 4, 512>} : (!tile.tensor<f32, "global", "(4,?):(?,1)">, index) -> !tile.tensor<f32, "global", "(4,512):(?,1)">
  %4 = "tile.load"(%3) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(4,512):(?,1)">) -> !tile.tensor<f32, "register", "(4,512):(1,4)">
  %5 = "tile.reduce"(%4) {kind = "sum", mode = 0 : i64} : (!tile.tensor<f32, "register", "(4,512):(1,4)">) -> !tile.tensor<f32, "register", "(1,512):(1,1)">
  %6 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %7 = "tile.local_tile"(%1, %6) {coord = "(?)", tile = array<i64: 512>} : (!tile.tensor<f16, "global", "(?):(1)">, index) -> !tile.tensor<f16, "global", "512:1">
  "tile.store"(%5, %7) : (!tile.tensor<f32, "register", "(1,512):(1,1)">, !tile.tensor<f16, "global", "512:1">) -> ()
  return
}

// -----

// A row's maximum over 128 threads (shuffles, then shared memory across the 4 warps) stored
// into a (1, 1) view: every thread holds the result, thread 0 alone writes it.
// CHECK-LABEL: func.func @rowmax(
// CHECK: gpu.barrier
// CHECK: %[[T:.*]] = arith.andi %thread_id_x, %c127{{(_[0-9]+)?}} : index
// CHECK: %[[LEAD:.*]] = arith.cmpi eq, %[[T]], %c0{{(_[0-9]+)?}} : index
// CHECK: scf.if
// CHECK: scf.if %[[LEAD]] {
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK: } else {
// CHECK: scf.if %[[LEAD]] {
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK: return
func.func @rowmax(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2) {name = "X"} : (!llvm.ptr, index) -> !tile.tensor<f32, "global", "(?,1024):(1024,1)">
  %1 = "tile.make_tensor"(%arg1, %arg2) {name = "Y"} : (!llvm.ptr, index) -> !tile.tensor<f32, "global", "(?,1):(1,1)">
  %2 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %3 = "tile.local_tile"(%0, %2) {coord = "(?,0)", tile = array<i64: 1, 1024>} : (!tile.tensor<f32, "global", "(?,1024):(1024,1)">, index) -> !tile.tensor<f32, "global", "(1,1024):(1024,1)">
  %4 = "tile.load"(%3) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(1,1024):(1024,1)">) -> !tile.tensor<f32, "register", "(1,1024):(1,1)">
  %5 = "tile.reduce"(%4) {kind = "max", mode = 1 : i64} : (!tile.tensor<f32, "register", "(1,1024):(1,1)">) -> !tile.tensor<f32, "register", "(1,1):(1,1)">
  %6 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %7 = "tile.local_tile"(%1, %6) {coord = "(?,0)", tile = array<i64: 1, 1>} : (!tile.tensor<f32, "global", "(?,1):(1,1)">, index) -> !tile.tensor<f32, "global", "(1,1):(1,1)">
  "tile.store"(%5, %7) : (!tile.tensor<f32, "register", "(1,1):(1,1)">, !tile.tensor<f32, "global", "(1,1):(1,1)">) -> ()
  return
}

// -----

// A shared buffer holds the largest swizzled offset its layout reaches, from the algebra:
// rows 0..2 of 8 halves, 64 apart, leave holes; row 2 (offset 128, bits 6-8 = 2) moves its
// chunk 0 to chunk 2, so offset 128 + 16 + 7 = 151 is the last element: 152 of them.
// CHECK: llvm.mlir.global internal @__smem_holey_s() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<152 x f16>
// CHECK-LABEL: func.func @holey(
func.func @holey() attributes {tile.kernel, tile.threads = array<i64: 32, 1, 1>} {
  %0 = "tile.alloc_shared"() {name = "s"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (3,8):(64,1)">
  "tile.barrier"() : () -> ()
  return
}

// -----

// A loop that carries register tensors (a `var` it updates): rebuilt to carry each thread's
// scalars. 256 f32 over 64 threads: s is one chunk of 4 per thread; m, one element, is a
// plain f32 that every thread holds (the reduction's result). No tile value or cast is left.
// CHECK-LABEL: func.func @carry(
// CHECK: %[[R:.*]]:5 = scf.for %{{.*}} = %{{.*}} to %arg2 step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32, f32, f32, f32)
// CHECK: gpu.shuffle xor
// CHECK: arith.maximumf
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32, f32, f32, f32, f32
// CHECK: arith.cmpi slt
// CHECK: arith.select
// CHECK-NOT: unrealized_conversion_cast
// CHECK-NOT: "tile.
func.func @carry(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index) attributes {tile.kernel, tile.threads = array<i64: 64, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2) {name = "x"} : (!llvm.ptr, index) -> !tile.tensor<f32, "global", "(?):(1)">
  %1 = "tile.make_tensor"(%arg1, %arg2) {name = "y"} : (!llvm.ptr, index) -> !tile.tensor<f32, "global", "(?):(1)">
  %s0 = "tile.fragment"() {block_shape = array<i64: 256>} : () -> !tile.tensor<f32, "register", "(256):(1)">
  "tile.fill"(%s0) {value = 0.0 : f32} : (!tile.tensor<f32, "register", "(256):(1)">) -> ()
  %m0 = "tile.fragment"() {block_shape = array<i64: 1>} : () -> !tile.tensor<f32, "register", "(1):(1)">
  "tile.fill"(%m0) {value = 0xFF800000 : f32} : (!tile.tensor<f32, "register", "(1):(1)">) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.for %k = %c0 to %arg2 step %c1 iter_args(%s = %s0, %m = %m0) -> (!tile.tensor<f32, "register", "(256):(1)">, !tile.tensor<f32, "register", "(1):(1)">) {
    %t = "tile.local_tile"(%0, %k) {coord = "(?)", tile = array<i64: 256>} : (!tile.tensor<f32, "global", "(?):(1)">, index) -> !tile.tensor<f32, "global", "(256):(1)">
    %x = "tile.load"(%t) {other = 0.0 : f32} : (!tile.tensor<f32, "global", "(256):(1)">) -> !tile.tensor<f32, "register", "(256):(1)">
    %s1 = "tile.binary"(%s, %x) {op = "add"} : (!tile.tensor<f32, "register", "(256):(1)">, !tile.tensor<f32, "register", "(256):(1)">) -> !tile.tensor<f32, "register", "(256):(1)">
    %mx = "tile.reduce"(%x) {kind = "max", mode = 0 : i64} : (!tile.tensor<f32, "register", "(256):(1)">) -> !tile.tensor<f32, "register", "(1):(1)">
    %m1 = "tile.binary"(%m, %mx) {op = "max"} : (!tile.tensor<f32, "register", "(1):(1)">, !tile.tensor<f32, "register", "(1):(1)">) -> !tile.tensor<f32, "register", "(1):(1)">
    scf.yield %s1, %m1 : !tile.tensor<f32, "register", "(256):(1)">, !tile.tensor<f32, "register", "(1):(1)">
  }
  %c = "tile.coord"(%r#0) {mode = 0 : i64} : (!tile.tensor<f32, "register", "(256):(1)">) -> !tile.tensor<i32, "register", "(256):(1)">
  %n = arith.index_cast %arg2 : index to i32
  %p = "tile.compare"(%c, %n) {pred = "lt"} : (!tile.tensor<i32, "register", "(256):(1)">, i32) -> !tile.tensor<i1, "register", "(256):(1)">
  %d = "tile.binary"(%r#0, %r#1) {op = "sub"} : (!tile.tensor<f32, "register", "(256):(1)">, !tile.tensor<f32, "register", "(1):(1)">) -> !tile.tensor<f32, "register", "(256):(1)">
  %zero = arith.constant 0.0 : f32
  %v = "tile.select"(%p, %d, %zero) : (!tile.tensor<i1, "register", "(256):(1)">, !tile.tensor<f32, "register", "(256):(1)">, f32) -> !tile.tensor<f32, "register", "(256):(1)">
  %out = "tile.local_tile"(%1, %c0) {coord = "(?)", tile = array<i64: 256>} : (!tile.tensor<f32, "global", "(?):(1)">, index) -> !tile.tensor<f32, "global", "(256):(1)">
  "tile.store"(%v, %out) : (!tile.tensor<f32, "register", "(256):(1)">, !tile.tensor<f32, "global", "(256):(1)">) -> ()
  return
}

// -----

// A row sum combined over a cluster of 2 blocks (tile.cluster = 2): after the block's own
// reduction, each thread writes its value into both blocks' scratch at its rank's slot (mapa
// to rank 0, then rank 1), one cluster barrier, then it reads both slots from its own block in
// rank order and adds them: no second barrier outside a loop. At entry, a relaxed cluster
// barrier: no block writes into another that has not started.
// CHECK-LABEL: func.func @cluster_rowsum(
// CHECK: nvvm.cluster.arrive.relaxed {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: gpu.barrier
// CHECK: nvvm.read.ptx.sreg.cluster.ctarank
// CHECK: nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK: nvvm.mapa
// CHECK-NEXT: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: %[[A:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: %[[B:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: arith.addf %[[A]], %[[B]] fastmath<contract> : f32
// CHECK-NOT: nvvm.cluster
// CHECK: return
func.func @cluster_rowsum(%arg0: !llvm.ptr, %arg1: index, %arg2: index) attributes {tile.cluster = 2 : i64, tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg2, %arg2) {name = "X"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %2 = "tile.local_tile"(%0, %1) {coord = "(?,0)", tile = array<i64: 1, 512>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f32, "global", "(1,512):(?,1)">
  %3 = "tile.load"(%2) {other = 0.0 : f32} : (!tile.tensor<f32, "global", "(1,512):(?,1)">) -> !tile.tensor<f32, "register", "(1,512):(1,1)">
  %4 = "tile.reduce"(%3) {kind = "sum", mode = 1 : i64} : (!tile.tensor<f32, "register", "(1,512):(1,1)">) -> !tile.tensor<f32, "register", "(1,1):(1,1)">
  %5 = "tile.cluster_reduce"(%4) {kind = "sum"} : (!tile.tensor<f32, "register", "(1,1):(1,1)">) -> !tile.tensor<f32, "register", "(1,1):(1,1)">
  %6 = "tile.binary"(%3, %5) {op = "div"} : (!tile.tensor<f32, "register", "(1,512):(1,1)">, !tile.tensor<f32, "register", "(1,1):(1,1)">) -> !tile.tensor<f32, "register", "(1,512):(1,1)">
  "tile.store"(%6, %2) : (!tile.tensor<f32, "register", "(1,512):(1,1)">, !tile.tensor<f32, "global", "(1,512):(?,1)">) -> ()
  return
}
