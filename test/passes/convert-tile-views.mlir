// convert-tile-views: each view becomes its base pointer and index math where it was, and its
// value a builtin.unrealized_conversion_cast of them to its tensor type, whose tile.view
// attribute says which part each operand is (static parts written there, `%i` the cast's
// operand i, `_` none); a slice's cast also names the view it was cut from and its coordinates
// (`cut`). `size` becomes the extent, the ids gpu's. convert-tile-to-gpu reads the casts (and
// refuses the view ops themselves), then erases them.
// RUN: tile-opt -p convert-tile-views %s | filecheck %s
// RUN: tile-opt -p convert-tile-views,convert-tile-copies,convert-tile-elementwise,convert-tile-reductions,convert-tile-memory,convert-tile-sync,convert-tile-mma,convert-tile-to-gpu %s | filecheck %s --check-prefix=LOWERED
// RUN: not tile-opt -p convert-tile-to-gpu %s 2>&1 | filecheck %s --check-prefix=ALONE
// RUN: tile-opt -p convert-tile-views --split-input-file --verify-diagnostics %s.bad

// CHECK: llvm.mlir.global internal @__smem_views_s() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<2048 x f16>
// CHECK-LABEL: func.func @views(
// CHECK: %[[P:.*]] = llvm.addrspacecast %arg0 : !llvm.ptr to !llvm.ptr<1>
// CHECK: %[[X:.*]] = builtin.unrealized_conversion_cast %[[P]], %arg1, %arg2 : !llvm.ptr<1>, index, index to !tile.tensor<f16, "global", "(?,?):(?,1)"> {tile.view = {bounds = "[[0,%1,0,_],[0,%2,1,_]]", offset = "0", shape = "[%1,%2]", span = 0 : i64, stride = "[%2,1]", swizzle = "_"}}
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[ROW:.*]] = arith.shli %[[BX]], %c6
// CHECK: %[[OFF:.*]] = arith.muli %[[ROW]], %arg2
// CHECK: %[[KT:.*]] = arith.shrui
// The `_` of the tile coordinate: a trailing mode of ceil(N / 32) tiles, its bound `outer`.
// CHECK: %[[T:.*]] = builtin.unrealized_conversion_cast %[[P]], %[[OFF]], %[[KT]], %arg2, %[[ROW]], %arg1 : {{.*}} to !tile.tensor<f16, "global", "(64,32,?):(?,1,32)"> {tile.view = {bounds = "[[%4,%5,0,_],[0,%3,1,[2,32]]]", offset = "%1", shape = "[64,32,%2]", span = 0 : i64, stride = "[%3,1,32]", swizzle = "_"}}
// The slice at the last tile (size - 1 of mode 2): cut from %[[T]] at (_,_,%7).
// CHECK: %[[LAST:.*]] = arith.subi %[[KT]], %c1
// CHECK: builtin.unrealized_conversion_cast %[[P]], {{.*}}, %[[T]], %[[LAST]] : {{.*}} {tile.view = {bounds = "[[%3,%4,0,_],[%5,%2,1,_]]", cut = "[%6,[_,_,%7]]", offset = "%1", shape = "[64,32]", span = 0 : i64, stride = "[%2,1]", swizzle = "_"}}
// CHECK: %[[S:.*]] = llvm.mlir.addressof @__smem_views_s : !llvm.ptr<3>
// CHECK: builtin.unrealized_conversion_cast %[[S]] : !llvm.ptr<3> to !tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (64,32):(32,1)"> {tile.view = {bounds = "[]", offset = "0", shape = "[64,32]", span = 2048 : i64, stride = "[32,1]", swizzle = "[2,3,3]"}}
// CHECK: builtin.unrealized_conversion_cast %[[S]] : !llvm.ptr<3> to !tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (32,64):(1,32)"> {tile.view = {bounds = "[]", offset = "0", shape = "[32,64]", span = 2048 : i64, stride = "[1,32]", swizzle = "[2,3,3]"}}
// CHECK: builtin.unrealized_conversion_cast %[[P]], {{.*}} to !tile.tensor<f16, "global", "(32,64):(1,?)"> {tile.view = {bounds = "[[%3,%4,1,_],[%5,%2,0,_]]", offset = "%1", shape = "[32,64]", span = 0 : i64, stride = "[1,%2]", swizzle = "_"}}
// CHECK: "tile.copy"
// CHECK-NOT: tile.local_tile
// CHECK-NOT: tile.slice

// LOWERED-LABEL: func.func @views(
// LOWERED: llvm.store
// LOWERED-NOT: unrealized_conversion_cast
// LOWERED-NOT: tile.
// LOWERED: return

// ALONE: error: 'tile.make_tensor' is lowered by convert-tile-views, which must run first
func.func @views(%arg0: !llvm.ptr, %arg1: index, %arg2: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1, %arg2, %arg2) {name = "x"} : (!llvm.ptr, index, index, index) -> !tile.tensor<f16, "global", "(?,?):(?,1)">
  %1 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %2 = "tile.local_tile"(%0, %1) {coord = "(?,_)", tile = array<i64: 64, 32>} : (!tile.tensor<f16, "global", "(?,?):(?,1)">, index) -> !tile.tensor<f16, "global", "(64,32,?):(?,1,32)">
  %3 = "tile.size"(%2) {mode = 2 : i64} : (!tile.tensor<f16, "global", "(64,32,?):(?,1,32)">) -> index
  %c1 = arith.constant 1 : index
  %4 = arith.subi %3, %c1 : index
  %5 = "tile.slice"(%2, %4) {coord = "(_,_,?)"} : (!tile.tensor<f16, "global", "(64,32,?):(?,1,32)">, index) -> !tile.tensor<f16, "global", "(64,32):(?,1)">
  %6 = "tile.alloc_shared"() {name = "s"} : () -> !tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (64,32):(32,1)">
  %7 = "tile.permute"(%6) {perm = array<i64: 1, 0>} : (!tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (64,32):(32,1)">) -> !tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (32,64):(1,32)">
  "tile.copy"(%5, %6) {atom = "auto"} : (!tile.tensor<f16, "global", "(64,32):(?,1)">, !tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (64,32):(32,1)">) -> ()
  %8 = "tile.permute"(%5) {perm = array<i64: 1, 0>} : (!tile.tensor<f16, "global", "(64,32):(?,1)">) -> !tile.tensor<f16, "global", "(32,64):(1,?)">
  "tile.copy"(%7, %8) {atom = "auto"} : (!tile.tensor<f16, "shared", "Sw<2,3,3> o 0 o (32,64):(1,32)">, !tile.tensor<f16, "global", "(32,64):(1,?)">) -> ()
  return
}

// Nested modes (lowering/tile_modes.py): a mode's stride is `[[extents],[strides]]`, its
// leaves. A global tensor's rows ((4,8):(1,256)) tiled by 16: (4,4):(1,256), at column tile
// block.x: offset block.x * 32 * 4. The D = 128 shared tile of attention, its columns
// (64,2):(1,8192): tiled by 32 with `_`, the tiles' mode (2,2):(32,8192) trails; a slice of it
// at block.x splits the coordinate into digits (and, shift); tile (0,3) of it is at
// 3 -> (1,1) -> 32 + 8192 = 8224.
// CHECK-LABEL: func.func @nested(
// CHECK: builtin.unrealized_conversion_cast {{.*}} to !tile.tensor<f16, "global", "((4,8),?):((1,256),4)"> {tile.view = {bounds = "[[0,32,0,_],[0,%1,1,_]]", offset = "0", shape = "[32,%1]", span = 0 : i64, stride = "[[[4,8],[1,256]],4]", swizzle = "_"}}
// CHECK: %[[C:.*]] = arith.shli %block_id_x, %c5
// CHECK: %[[O:.*]] = arith.shli %[[C]], %c2
// CHECK: builtin.unrealized_conversion_cast %{{.*}}, %[[O]], %[[C]], %arg1 : {{.*}} to !tile.tensor<f16, "global", "((4,4),32):((1,256),4)"> {tile.view = {bounds = "[[0,32,0,_],[%2,%3,1,_]]", offset = "%1", shape = "[16,32]", span = 0 : i64, stride = "[[[4,4],[1,256]],4]", swizzle = "_"}}
// CHECK: {tile.view = {bounds = "[]", offset = "0", shape = "[128,128]", span = 16384 : i64, stride = "[64,[[64,2],[1,8192]]]", swizzle = "[3,3,3]"}}
// CHECK: {tile.view = {bounds = "[]", offset = "%1", shape = "[32,32,4]", span = 16384 : i64, stride = "[64,1,[[2,2],[32,8192]]]", swizzle = "[3,3,3]"}}
// CHECK: %[[LOW:.*]] = arith.andi %block_id_x, %c1
// CHECK: %[[D0:.*]] = arith.shli %[[LOW]], %c5
// CHECK: %[[HIGH:.*]] = arith.shrui %block_id_x, %c1
// CHECK: %[[D1:.*]] = arith.shli %[[HIGH]], %c13
// CHECK: arith.addi %[[D0]], %[[D1]]
// CHECK: {tile.view = {bounds = "[]", cut = "[%2,[_,_,%3]]", offset = "%1", shape = "[32,32]", span = 16384 : i64, stride = "[64,1]", swizzle = "[3,3,3]"}}
// CHECK: {tile.view = {bounds = "[]", offset = "8224", shape = "[16,32]", span = 16384 : i64, stride = "[64,1]", swizzle = "[3,3,3]"}}

// LOWERED-LABEL: func.func @nested(
// LOWERED: llvm.load {{.*}} : !llvm.ptr<1> -> vector<4xf16>
// LOWERED: llvm.store {{.*}} : f16, !llvm.ptr<3>
// LOWERED-NOT: unrealized_conversion_cast
// LOWERED: return
func.func @nested(%arg0: !llvm.ptr, %arg1: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg1) {name = "x"} : (!llvm.ptr, index) -> !tile.tensor<f16, "global", "((4,8),?):((1,256),4)">
  %1 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %2 = "tile.local_tile"(%0, %1) {coord = "(0,?)", tile = array<i64: 16, 32>} : (!tile.tensor<f16, "global", "((4,8),?):((1,256),4)">, index) -> !tile.tensor<f16, "global", "((4,4),32):((1,256),4)">
  %3 = "tile.alloc_shared"() {name = "s"} : () -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,(64,2)):(64,(1,8192))">
  %4 = "tile.local_tile"(%3, %1) {coord = "(?,_)", tile = array<i64: 32, 32>} : (!tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,(64,2)):(64,(1,8192))">, index) -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (32,32,(2,2)):(64,1,(32,8192))">
  %5 = "tile.slice"(%4, %1) {coord = "(_,_,?)"} : (!tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (32,32,(2,2)):(64,1,(32,8192))">, index) -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (32,32):(64,1)">
  %6 = "tile.local_tile"(%3) {coord = "(0,3)", tile = array<i64: 16, 32>} : (!tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (128,(64,2)):(64,(1,8192))">) -> !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (16,32):(64,1)">
  "tile.copy"(%2, %6) {atom = "auto"} : (!tile.tensor<f16, "global", "((4,4),32):((1,256),4)">, !tile.tensor<f16, "shared", "Sw<3,3,3> o 0 o (16,32):(64,1)">) -> ()
  return
}

// tile.read: the element of a global integer tensor, as an index, under a test that the
// coordinate lies inside it (unsigned: below 0 is outside), 0 otherwise. tile.window: rows
// lo .. hi (inclusive) of x: the offset moves to lo * stride, the extent is hi - lo + 1, the
// old bound sees lo more and the new extent bounds the mode too; tiles of it carry both.
// CHECK-LABEL: func.func @windows(
// CHECK: %[[IN:.*]] = arith.cmpi ult, %block_id_z, %arg4 : index
// CHECK: %[[E:.*]] = scf.if %[[IN]] -> (i32) {
// CHECK: llvm.load {{.*}} : !llvm.ptr<1> -> i32
// CHECK: } else {
// CHECK-NEXT: scf.yield %c0_i32 : i32
// CHECK: %[[LO:.*]] = arith.index_cast %[[E]] : i32 to index
// CHECK: %[[HI:.*]] = arith.index_cast {{.*}} : i32 to index
// CHECK: %[[OFF:.*]] = arith.muli %[[LO]], %arg3 : index
// CHECK: %[[D:.*]] = arith.subi %[[HI]], %[[LO]] : index
// CHECK: %[[N:.*]] = arith.addi %[[D]], %c1 : index
// CHECK: builtin.unrealized_conversion_cast %{{.*}}, %[[OFF]], %[[N]], %arg3, %[[LO]], %arg2 : {{.*}} {tile.view = {bounds = "[[%4,%5,0,_],[0,64,1,_],[0,%2,0,_]]", offset = "%1", shape = "[%2,64]", span = 0 : i64, stride = "[%3,1]", swizzle = "_"}}
// CHECK: {tile.view = {bounds = "[[%3,%4,0,_],[0,64,1,_],[%5,%6,0,_]]", offset = "%1", shape = "[32,64]", span = 0 : i64, stride = "[%2,1]", swizzle = "_"}}
// CHECK: {tile.view = {bounds = "[[0,%1,0,_],[8,64,1,_],[0,8,1,_]]", offset = "8", shape = "[%1,8]", span = 0 : i64, stride = "[%2,1]", swizzle = "_"}}

// LOWERED-LABEL: func.func @windows(
// LOWERED: llvm.load {{.*}} : !llvm.ptr<1> -> i32
// LOWERED-NOT: "tile.
// LOWERED: return
func.func @windows(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: index, %arg3: index, %arg4: index) attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {
  %0 = "tile.make_tensor"(%arg0, %arg2, %arg3) {name = "x"} : (!llvm.ptr, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %1 = "tile.make_tensor"(%arg1, %arg4) {name = "cu"} : (!llvm.ptr, index) -> !tile.tensor<i32, "global", "(?):(1)">
  %2 = "tile.block_id"() {dim = 2 : i64} : () -> index
  %3 = "tile.read"(%1, %2) {coord = "(?)"} : (!tile.tensor<i32, "global", "(?):(1)">, index) -> index
  %4 = "tile.read"(%1) {coord = "(0)"} : (!tile.tensor<i32, "global", "(?):(1)">) -> index
  %5 = "tile.window"(%0, %3, %4) {window = "(?..?,_)"} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index, index) -> !tile.tensor<f16, "global", "(?,64):(?,1)">
  %6 = "tile.block_id"() {dim = 0 : i64} : () -> index
  %7 = "tile.local_tile"(%5, %6) {coord = "(?,0)", tile = array<i64: 32, 64>} : (!tile.tensor<f16, "global", "(?,64):(?,1)">, index) -> !tile.tensor<f16, "global", "(32,64):(?,1)">
  %8 = "tile.window"(%0) {window = "(_,8..15)"} : (!tile.tensor<f16, "global", "(?,64):(?,1)">) -> !tile.tensor<f16, "global", "(?,8):(?,1)">
  return
}
