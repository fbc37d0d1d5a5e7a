// An SM90 kernel with nvgpu mbarrier ops, vector loads and libdevice math: the same pipeline
// lowers it; try_wait.parity only survives translation because convert-nvvm-to-llvm makes it
// inline PTX; the llvmlite path links libdevice for __nv_sqrtf/__nv_fmaf, which comes with the
// CUDA toolkit that ptxas also comes from.
// REQUIRES: ptxas
// RUN: tilec compile %s --from gpu --arch sm_90a --emit llvm | filecheck %s --check-prefix=LLVM
// RUN: tilec compile %s --from gpu --arch sm_90a --emit ptx | filecheck %s --check-prefix=PTX
// RUN: tilec compile %s --from gpu --arch sm_90a --ptx-via mlir | filecheck %s --check-prefix=PTX
// RUN: tilec compile %s --from gpu --arch sm_90a --resource-usage 2>&1 >/dev/null | filecheck %s --check-prefix=RES

// LLVM-LABEL: define ptx_kernel void @mbar_vec(
// LLVM: call void @llvm.nvvm.mbarrier.init.shared
// LLVM: call i64 @llvm.nvvm.mbarrier.arrive.shared
// LLVM: call void asm sideeffect "{{.*}}mbarrier.try_wait.parity.shared.b64
// LLVM-NOT: nvgpu

// PTX: .target sm_90a
// PTX-LABEL: .visible .entry mbar_vec(
// PTX: .shared .align 8 .b8 __mbarrier[8];
// PTX: mbarrier.init.shared.b64
// PTX: mbarrier.arrive.shared.b64
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: sqrt.{{approx|rn}}.f32
// PTX: fma.rn.f32
// PTX-NOT: __nv_
// PTX: ret;

// RES:      kernel registers spill stores B spill loads B shared B stack B barriers
// RES-NEXT: mbar_vec {{[0-9]+}} 0 0 8

!barrier = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mbar_vec(%a: !llvm.ptr<1>, %out: memref<256xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %tid = gpu.thread_id x
      %bar = nvgpu.mbarrier.create -> !barrier
      %n = arith.constant 128 : index
      nvgpu.mbarrier.init %bar[%c0], %n : !barrier
      %tok = nvgpu.mbarrier.arrive %bar[%c0] : !barrier -> !nvgpu.mbarrier.token
      %phase = arith.constant false
      %ticks = arith.constant 10000000 : index
      nvgpu.mbarrier.try_wait.parity %bar[%c0], %phase, %ticks : !barrier
      %v = vector.load %out[%c0] : memref<256xf32>, vector<4xf32>
      %e = math.sqrt %v : vector<4xf32>
      %f = math.fma %e, %v, %v : vector<4xf32>
      vector.store %f, %out[%c0] : memref<256xf32>, vector<4xf32>
      gpu.return
    }
  }
}
