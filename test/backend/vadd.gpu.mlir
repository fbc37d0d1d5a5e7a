// The hand-written vector add: lowers through the nvvm and llvm stages to PTX on both targets,
// and MLIR's own gpu-module-to-binary gives the same entry.
// RUN: tilec compile %s --from gpu --arch sm_80 --emit nvvm | filecheck %s --check-prefix=LLVM
// RUN: tilec compile %s --from gpu --arch sm_80 --emit ptx | filecheck %s --check-prefixes=PTX,SM80
// RUN: tilec compile %s --from gpu --arch sm_90a --emit ptx | filecheck %s --check-prefixes=PTX,SM90
// RUN: tilec compile %s --from gpu --arch sm_90a --ptx-via mlir | filecheck %s --check-prefixes=PTX,SM90

// LLVM-LABEL: llvm.func @vadd(
// LLVM-SAME: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i64)
// LLVM-SAME: nvvm.kernel
// LLVM-NOT: gpu.func
// LLVM-NOT: scf.if

// SM80: .target sm_80
// SM90: .target sm_90a
// PTX-LABEL: .visible .entry vadd(
// PTX-NEXT: .param .u64 .ptr .global .align 1 vadd_param_0,
// PTX: setp.{{[a-z]+}}.s64
// PTX: ld.global.b32
// PTX: ld.global.b32
// PTX: add{{(.rn)?}}.f32
// PTX: st.global.b32

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @vadd(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %c: !llvm.ptr<1>, %n: i64) kernel
        attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %i64 = arith.index_cast %i : index to i64
      %in = arith.cmpi slt, %i64, %n : i64
      scf.if %in {
        %pa = llvm.getelementptr %a[%i64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
        %pb = llvm.getelementptr %b[%i64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
        %pc = llvm.getelementptr %c[%i64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
        %x = llvm.load %pa : !llvm.ptr<1> -> f32
        %y = llvm.load %pb : !llvm.ptr<1> -> f32
        %s = arith.addf %x, %y : f32
        llvm.store %s, %pc : f32, !llvm.ptr<1>
      }
      gpu.return
    }
  }
}
