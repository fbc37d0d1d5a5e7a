// outline-tile-kernels: a lowered kernel moves into gpu.module @kernels as a gpu.func with the
// runtime's ABI: pointers in the global space, runtime sizes as i64 (32-bit `index` inside: the dlti.dl_spec), tile.* attributes kept,
// tile.dynamic_smem and the known block size added; workgroup globals move along.
// RUN: tile-opt -p outline-tile-kernels %s | filecheck %s
// RUN: tile-opt -p outline-tile-kernels --split-input-file --verify-diagnostics %s.bad
// The wide variant (index-bitwidth=64) keeps MLIR's 64-bit index: no dl_spec, same ABI.
// RUN: tile-opt -p "outline-tile-kernels{index-bitwidth=64}" %s | filecheck %s --check-prefix=WIDE
// RUN: tile-opt -p "outline-tile-kernels{index-bitwidth=32}" %s | filecheck %s
// RUN: not tile-opt -p "outline-tile-kernels{index-bitwidth=16}" %s 2>&1 | filecheck %s --check-prefix=BAD16
// RUN: not tile-opt -p "outline-tile-kernels{index-bitwidth=wide}" %s 2>&1 | filecheck %s --check-prefix=BADWORD

// WIDE: module attributes {gpu.container_module} {
// WIDE-NOT: dlti.dl_spec
// WIDE: gpu.module @kernels {
// WIDE-NEXT: llvm.mlir.global internal @__smem_scale_s()
// WIDE-NEXT: gpu.func @scale(%[[X:.*]]: !llvm.ptr<1>, %[[A:.*]]: f32, %[[N:.*]]: i64) kernel
// WIDE-NEXT: %[[NI:.*]] = arith.index_cast %[[N]] : i64 to index
// WIDE-NOT: dlti.dl_spec
// WIDE: gpu.return

// BAD16: error: index-bitwidth must be 32 or 64, got 16
// BADWORD: option 'index-bitwidth' of pass 'outline-tile-kernels': bad value 'wide'

// CHECK: module attributes {gpu.container_module} {
// CHECK-NOT: func.func @scale
// CHECK: gpu.module @kernels attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i32>} {
// CHECK-NEXT: llvm.mlir.global internal @__smem_scale_s() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
// CHECK-NEXT: gpu.func @scale(%[[X:.*]]: !llvm.ptr<1>, %[[A:.*]]: f32, %[[N:.*]]: i64) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-SAME: tile.arg_names = ["x", "alpha", "N"]
// CHECK-SAME: tile.dynamic_smem = 0 : i64
// CHECK-SAME: tile.grid = ["cdiv(N, 128)"]
// CHECK-SAME: tile.target = "sm_80", tile.threads = array<i64: 128, 1, 1>
// CHECK-NEXT: %[[NI:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK-NEXT: %[[I:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi slt, %[[I]], %[[NI]] : index
// CHECK: llvm.getelementptr %[[X]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: arith.mulf %{{.*}}, %[[A]] : f32
// CHECK: gpu.return
llvm.mlir.global internal @__smem_scale_s() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
func.func @scale(%x: !llvm.ptr, %alpha: f32, %n: index) attributes {tile.arg_names = ["x", "alpha", "N"], tile.grid = ["cdiv(N, 128)"], tile.kernel, tile.target = "sm_80", tile.threads = array<i64: 128, 1, 1>} {
  %x1 = llvm.addrspacecast %x : !llvm.ptr to !llvm.ptr<1>
  %i = gpu.thread_id x
  %in = arith.cmpi slt, %i, %n : index
  scf.if %in {
    %i64 = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %x1[%i64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
    %v = llvm.load %p : !llvm.ptr<1> -> f32
    %s = arith.mulf %v, %alpha : f32
    llvm.store %s, %p : f32, !llvm.ptr<1>
  }
  return
}
