// ptxas accepts the vadd PTX of both paths on both targets, without spills or stack.
// REQUIRES: ptxas
// RUN: tilec compile %S/vadd.gpu.mlir --arch sm_80 --resource-usage 2>&1 >/dev/null | filecheck %s
// RUN: tilec compile %S/vadd.gpu.mlir --arch sm_90a --resource-usage 2>&1 >/dev/null | filecheck %s
// RUN: tilec compile %S/vadd.gpu.mlir --arch sm_90a --ptx-via mlir -o %t.ptx
// RUN: ptxas -v -arch=sm_90a %t.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=MLIR

// CHECK:      kernel registers spill stores B spill loads B shared B stack B barriers
// CHECK-NEXT: vadd {{[0-9]+}} 0 0 0 0 0

// MLIR: Compiling entry function 'vadd' for 'sm_90a'
// MLIR: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
