// The tilec compile ladder from MLIR input: stop at any stage, dump every stage, clear errors.
// RUN: tilec compile %s --from gpu --emit nvvm | filecheck %s --check-prefix=NVVM
// RUN: tilec compile %s --from gpu --arch sm_80 --emit ptx | filecheck %s --check-prefix=PTX80
// RUN: tilec compile %s --from gpu --emit ptx | filecheck %s --check-prefix=PTX90
// RUN: rm -rf %t && tilec compile %s --from gpu --emit ptx --dump-dir %t -o %t.ptx && ls %t | filecheck %s --check-prefix=DUMP
// RUN: tile-opt -p "gpu.module(convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1})" %s | filecheck %s --check-prefix=NVVM
// RUN: not tilec compile %s --emit ptx 2>&1 | filecheck %s --check-prefix=NOSTAGE
// RUN: not tilec compile %s.missing.tile 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: mkdir -p %t.dir && not tilec compile %s --from gpu --emit nvvm -o %t.dir 2>&1 | filecheck %s --check-prefix=ISDIR
// RUN: not tilec compile %s --from gpu --emit nope 2>&1 | filecheck %s --check-prefix=BADEMIT
// RUN: not tilec compile %s --from gpu -D BM 2>&1 | filecheck %s --check-prefix=BADPARAM

// NVVM: llvm.func @scale(
// NVVM-SAME: nvvm.kernel
// NVVM: nvvm.read.ptx.sreg.tid.x

// PTX80: .target sm_80
// PTX80: .visible .entry scale(
// PTX80: mul.rn.f32
// PTX90: .target sm_90a

// DUMP: tilec-compile.gpu.mlir
// DUMP-NEXT: tilec-compile.ll
// DUMP-NEXT: tilec-compile.nvvm.mlir
// DUMP-NEXT: tilec-compile.ptx

// NOSTAGE: error: cannot tell which stage
// NOSTAGE-NEXT: note: name it k.tile, k.<stage>.mlir, k.ll or k.ptx, or pass --from STAGE
// MISSING: error: '{{.*}}.missing.tile' does not exist
// An output path that is a folder is an error naming it, not a traceback.
// ISDIR: error: cannot write '{{.*}}.dir': Is a directory
// ISDIR-NOT: Traceback
// BADEMIT: error: unknown stage 'nope'
// BADPARAM: error: -D expects NAME=VALUE, got 'BM'

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%x: memref<256xf32>, %s: f32) kernel attributes {tile.target = "sm_90a"} {
      %tid = gpu.thread_id x
      %v = memref.load %x[%tid] : memref<256xf32>
      %y = arith.mulf %v, %s : f32
      memref.store %y, %x[%tid] : memref<256xf32>
      gpu.return
    }
  }
}
