// tile-distribute: every register tensor's thread–value layout (thread × value → the tile's
// column-major index) written into its type, `!tile.frag<ELEM, LAYOUT, TV>`; convert-tile-to-gpu
// lowers each register tensor as its type says, and refuses one without it.
// RUN: tile-opt -p tile-distribute --split-input-file %s | filecheck %s
// RUN: tile-opt -p tile-distribute,convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu --split-input-file %s | filecheck %s --check-prefix=LOWERED
// RUN: tile-opt -p tile-distribute --split-input-file --verify-diagnostics %s.bad
// RUN: not tile-opt -p convert-tile-to-gpu --split-input-file %s 2>&1 | filecheck %s --check-prefix=BARE
// RUN: tile-opt -p convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu --split-input-file --verify-diagnostics %s.typed
// RUN: not tile-opt -p tile-distribute --split-input-file %s.typed 2>&1 | filecheck %s --check-prefix=RETYPE
// RUN: tilec compile %repo/examples/attention.tile -D BM=64 --emit tile | tile-opt -p tile-distribute | filecheck %s --check-prefix=FLASH

// FlashAttention's loop (BM = 64): the running row max m and sum l are fresh (64,1) fragments that meet
// the reduction of S (an m16n8k16 accumulator over 4x1 warps on 64x64: lanes (4,8):(128,1),
// warps (4,1):(16,4096); values (2,2):(64,8), column repeats 8:512), so they are spread as
// it is, the column's stride 0: each row's value in the four lanes of its quad. The loop
// carries them and o (the P V accumulator) with those TV layouts.
// FLASH: "tile.fragment"() {{.*}} -> !tile.frag<f32, "(64,1):(1,64)", "(64,64):(1,0) o 0 o ((4,8,4,1),(2,2,1,8)):((128,1,16,4096),(64,8,16,512))">
// FLASH: scf.for {{.*}} -> (!tile.frag<f32, "(64,1):(1,64)", "(64,64):(1,0) o 0 o ((4,8,4,1),(2,2,1,8)):((128,1,16,4096),(64,8,16,512))">, !tile.frag<f32, "(4,1,8):(1,4,4)", "((4,8,4,1),(2,2,1,8)):((128,1,16,4096),(64,8,16,512))">, !tile.frag<f32, "(64,1):(1,64)", "(64,64):(1,0) o 0 o

// A value typed already keeps its TV layout only if it is the one decided here (a lone 64x64
// f32 fragment: 16-byte chunks along its last mode, thread t at column 4t mod 64, row 4t/64).
// RETYPE: error: its type says ((128),(4,8)):((1),(128,512)), but it is spread as ((16,8),(4,8)):((256,1),(64,8))
// RETYPE: error: its type says ((128),(2,4)):((8),(4,2)), but it is spread as ((64,2),(4,2)):((16,1),(4,2))

// Four rows of 256 f32 over 128 threads: 16-byte chunks (V = 4) along the unit-stride mode 1,
// chunk v = t + 128 i at e = 4 v (e = column + 256 row). Thread t < 64 starts at column 4t of
// row 0 (index 16t), t >= 64 one row down (+1): threads (64,2):(16,1); values j = 0..3 next
// columns (4j), chunk i = 1 two rows down (+2): (4,2):(4,2). The row sums: the same layout
// with the column's stride 0 (every thread of a row holds its sum), which the loop's running
// sum (a fragment) takes from the sum it meets; the division broadcasts it back.
// CHECK-LABEL: func.func @rows(
// CHECK: "tile.fragment"() {{.*}} -> !tile.frag<f32, "(4,1):(1,4)", "(4,256):(1,0) o 0 o ((64,2),(4,2)):((16,1),(4,2))">
// CHECK: scf.for {{.*}} -> (!tile.frag<f32, "(4,1):(1,4)", "(4,256):(1,0) o 0 o ((64,2),(4,2)):((16,1),(4,2))">)
// CHECK: "tile.load"({{.*}} -> !tile.frag<f32, "(4,256):(1,4)", "((64,2),(4,2)):((16,1),(4,2))">
// CHECK: "tile.reduce"({{.*}} -> !tile.frag<f32, "(4,1):(1,4)", "(4,256):(1,0) o 0 o ((64,2),(4,2)):((16,1),(4,2))">
// CHECK: "tile.binary"({{.*}} -> !tile.frag<f32, "(4,1):(1,4)", "(4,256):(1,0) o 0 o ((64,2),(4,2)):((16,1),(4,2))">
// CHECK: scf.yield {{.*}} : !tile.frag<f32, "(4,1):(1,4)", "(4,256):(1,0) o 0 o
// CHECK: "tile.binary"({{.*}}) {op = "div"} {{.*}} -> !tile.frag<f32, "(4,256):(1,4)", "((64,2),(4,2)):((16,1),(4,2))">
// The loop carries the row sums as one scalar per row group of the thread: 2.
// LOWERED-LABEL: func.func @rows(
// LOWERED: scf.for {{.*}} -> (f32, f32) {
// LOWERED-NOT: "tile.
// LOWERED: return
func.func @rows(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "x"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 4, 256>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(4,256):(?,1)">
  %2 = "tile.fragment"() {block_shape = array<i64: 4, 1>} : () -> !tile.tensor<f32, "register", "(4,1):(1,4)">
  "tile.fill"(%2) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(4,1):(1,4)">) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %3 = scf.for %i = %c0 to %arg1 step %c1 iter_args(%s = %2) -> (!tile.tensor<f32, "register", "(4,1):(1,4)">) {
    %4 = "tile.load"(%1) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(4,256):(?,1)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
    %5 = "tile.reduce"(%4) {kind = "sum", mode = 1 : i64} : (!tile.tensor<f32, "register", "(4,256):(1,4)">) -> !tile.tensor<f32, "register", "(4,1):(1,4)">
    %6 = "tile.binary"(%s, %5) {op = "add"} : (!tile.tensor<f32, "register", "(4,1):(1,4)">, !tile.tensor<f32, "register", "(4,1):(1,4)">) -> !tile.tensor<f32, "register", "(4,1):(1,4)">
    scf.yield %6 : !tile.tensor<f32, "register", "(4,1):(1,4)">
  }
  %7 = "tile.load"(%1) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(4,256):(?,1)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  %8 = "tile.binary"(%7, %3) {op = "div"} : (!tile.tensor<f32, "register", "(4,256):(1,4)">, !tile.tensor<f32, "register", "(4,1):(1,4)">) -> !tile.tensor<f32, "register", "(4,256):(1,4)">
  "tile.store"(%8, %1) : (!tile.tensor<f32, "register", "(4,256):(1,4)">, !tile.tensor<f32, "global", "(4,256):(?,1)">) -> ()
  return
}

// -----

// Runs of 4 along mode 1 of a 2 x 256 f32 tile over 32 threads (4-element chunks, thread t at
// column 4t, index 8t): each run is one chunk, so the 2 x 64 result keeps the chunks' threads
// and order with one element a chunk (thread t at column t, index 2t). The running sum, a fresh
// 2 x 64 fragment, takes it from the runs it meets; lowered, each run is 3 adds in the thread.
// CHECK-LABEL: func.func @runs(
// CHECK: "tile.fragment"() {{.*}} -> !tile.frag<f32, "(2,64):(1,2)", "((32),(1,2,2)):((2),(1,64,1))">
// CHECK: "tile.load"({{.*}} -> !tile.frag<f32, "(2,256):(1,2)", "((32),(4,2,2)):((8),(2,256,1))">
// CHECK: "tile.reduce_group"({{.*}} -> !tile.frag<f32, "(2,64):(1,2)", "((32),(1,2,2)):((2),(1,64,1))">
// CHECK: "tile.binary"({{.*}} -> !tile.frag<f32, "(2,64):(1,2)", "((32),(1,2,2)):((2),(1,64,1))">
// LOWERED-LABEL: func.func @runs(
// LOWERED-NOT: gpu.shuffle
// LOWERED-COUNT-12: arith.addf {{.*}} fastmath<contract> : f32
// LOWERED-NOT: gpu.shuffle
// LOWERED: return
func.func @runs(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 32, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "x"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 2, 256>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(2,256):(?,1)">
  %2 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 2, 64>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(2,64):(?,1)">
  %3 = "tile.fragment"() {block_shape = array<i64: 2, 64>} : () -> !tile.tensor<f32, "register", "(2,64):(1,2)">
  "tile.fill"(%3) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(2,64):(1,2)">) -> ()
  %4 = "tile.load"(%1) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(2,256):(?,1)">) -> !tile.tensor<f32, "register", "(2,256):(1,2)">
  %5 = "tile.reduce_group"(%4) {group = 4 : i64, kind = "sum", mode = 1 : i64} : (!tile.tensor<f32, "register", "(2,256):(1,2)">) -> !tile.tensor<f32, "register", "(2,64):(1,2)">
  %6 = "tile.binary"(%3, %5) {op = "add"} : (!tile.tensor<f32, "register", "(2,64):(1,2)">, !tile.tensor<f32, "register", "(2,64):(1,2)">) -> !tile.tensor<f32, "register", "(2,64):(1,2)">
  "tile.store"(%6, %2) : (!tile.tensor<f32, "register", "(2,64):(1,2)">, !tile.tensor<f32, "global", "(2,64):(?,1)">) -> ()
  return
}

// -----

// A tile whose unit stride is mode 0 (a column-major 64x64 f16 tile) is chunked down mode 0:
// V = 8, thread t at index 8t (threads 0..7 cover a column): (512):(8) threads, values
// (8,1):(1,4096), one chunk each. A reduction along mode 1 of it is one element per row,
// spread as the chunks with mode 1's stride 0. A one-element fragment is plain: every thread
// holds its value.
// CHECK-LABEL: func.func @columns(
// CHECK: "tile.load"({{.*}} -> !tile.frag<f16, "(64,64):(1,64)", "((512),(8,1)):((8),(1,4096))">
// CHECK: "tile.convert"({{.*}} -> !tile.frag<f32, "(64,64):(1,64)", "((512),(8,1)):((8),(1,4096))">
// CHECK: "tile.reduce"({{.*}} -> !tile.frag<f32, "(64,1):(1,64)", "(64,64):(1,0) o 0 o ((512),(8,1)):((8),(1,4096))">
// CHECK: "tile.fragment"() {{.*}} -> !tile.frag<f32, "(1,1):(1,1)", "((512),(1)):((0),(0))">
func.func @columns(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 512, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "x"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(1,?)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,?):(1,?)">, index, index) -> !tile.tensor<f16, "global", "(64,64):(1,?)">
  %2 = "tile.load"(%1) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "global", "(64,64):(1,?)">) -> !tile.tensor<f16, "register", "(64,64):(1,64)">
  %3 = "tile.convert"(%2) : (!tile.tensor<f16, "register", "(64,64):(1,64)">) -> !tile.tensor<f32, "register", "(64,64):(1,64)">
  %4 = "tile.reduce"(%3) {kind = "max", mode = 1 : i64} : (!tile.tensor<f32, "register", "(64,64):(1,64)">) -> !tile.tensor<f32, "register", "(64,1):(1,64)">
  %5 = "tile.fragment"() {block_shape = array<i64: 1, 1>} : () -> !tile.tensor<f32, "register", "(1,1):(1,1)">
  "tile.fill"(%5) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(1,1):(1,1)">) -> ()
  return
}

// -----

// An MMA's accumulator: the tiled m16n8k16 C layout over 2x2 warps on a 64x64 block
// (atoms.tiled_c): lanes (4,8):(128,1) (column pair 2q, row g), warps (2,2):(32,2048); values
// (2,2):(64,8) (column +1, row +8), repeats (2,4):(16,512). What is loaded like it is spread
// as it is, and so is the epilogue's math on both. The loaded value reaches the store through
// elementwise ops alone with nothing between that writes memory: the load, the convert and the
// add are marked tile.deferred (computed where they are stored), the fill and the store not.
// CHECK-LABEL: func.func @accumulator(
// CHECK: "tile.fragment"({{.*}} -> !tile.frag<f32, "(4,2,4):(1,4,8)", "((4,8,2,2),(2,2,2,4)):((128,1,32,2048),(64,8,16,512))">
// CHECK: "tile.fill"({{.*}}) {value = 0.000000e+00 : f32} :
// CHECK: "tile.load"({{.*}}) {other = 0.000000e+00 : f16, tile.deferred} : ({{.*}} -> !tile.frag<f16, "(4,2,4):(1,4,8)", "((4,8,2,2),(2,2,2,4)):((128,1,32,2048),(64,8,16,512))">
// CHECK: "tile.convert"({{.*}}) {tile.deferred}
// CHECK: "tile.binary"({{.*}}) {op = "add", tile.deferred} : ({{.*}} -> !tile.frag<f32, "(4,2,4):(1,4,8)", "((4,8,2,2),(2,2,2,4)):((128,1,32,2048),(64,8,16,512))">
// CHECK-NOT: tile.deferred
// CHECK: return
func.func @accumulator(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "C"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 64, 64>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(64,64):(?,1)">
  %2 = "tile.tiled_mma"() : () -> !tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">
  %3 = "tile.fragment"(%2) {block_shape = array<i64: 64, 64>} : (!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  "tile.fill"(%3) {value = 0.000000e+00 : f32} : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> ()
  %4 = "tile.load"(%1, %3) {other = 0.000000e+00 : f16} : (!tile.tensor<f16, "global", "(64,64):(?,1)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> !tile.tensor<f16, "register", "(4,2,4):(1,4,8)">
  %5 = "tile.convert"(%4) : (!tile.tensor<f16, "register", "(4,2,4):(1,4,8)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  %6 = "tile.binary"(%3, %5) {op = "add"} : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">) -> !tile.tensor<f32, "register", "(4,2,4):(1,4,8)">
  "tile.store"(%6, %1) : (!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">, !tile.tensor<f16, "global", "(64,64):(?,1)">) -> ()
  return
}

// BARE: error: a register tensor without its thread–value layout: run tile-distribute first

// -----

// A 5x12 f32 tile over 32 threads: chunks of 4 along mode 1 (e = column + 12 row), 15 chunks,
// so thread t < 15 holds one. The chunks cut across the rows (12 is no multiple of 32 x 4), so
// no single layout composes them with e's order: the TV layout is that composition written
// out, `by_e o 0 o chunks` (e → (12,5):(5,1), the column-major index), which convert-tile-to-gpu
// reads back to the same spread.
// CHECK-LABEL: func.func @odd(
// CHECK: "tile.load"({{.*}} -> !tile.frag<f32, "(5,12):(1,5)", "(12,5):(5,1) o 0 o ((32),(4,1)):((4),(1,128))">
// LOWERED-LABEL: func.func @odd(
// LOWERED-NOT: "tile.
// LOWERED: return
func.func @odd(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 32, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg1, %arg1) {name = "x"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
  %1 = "tile.local_tile"(%0, %arg1, %arg1) {coord = "(?,?)", tile = array<i64: 5, 12>} : (!tile.tensor<f32, "global", "(?,?):(?,1)">, index, index) -> !tile.tensor<f32, "global", "(5,12):(?,1)">
  %2 = "tile.load"(%1) {other = 0.000000e+00 : f32} : (!tile.tensor<f32, "global", "(5,12):(?,1)">) -> !tile.tensor<f32, "register", "(5,12):(1,5)">
  %3 = "tile.binary"(%2, %2) {op = "add"} : (!tile.tensor<f32, "register", "(5,12):(1,5)">, !tile.tensor<f32, "register", "(5,12):(1,5)">) -> !tile.tensor<f32, "register", "(5,12):(1,5)">
  "tile.store"(%3, %1) : (!tile.tensor<f32, "register", "(5,12):(1,5)">, !tile.tensor<f32, "global", "(5,12):(?,1)">) -> ()
  return
}
