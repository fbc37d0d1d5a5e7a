// ptxas accepts the PTX of every memory-bound example for sm_80 and sm_90a, without spills,
// stack or local memory.
// REQUIRES: ptxas
// The cubin stage runs ptxas itself and writes an ELF.
// RUN: tilec compile %repo/examples/vadd.tile --emit cubin -o %t.cubin && od -c -N 4 %t.cubin | filecheck %s --check-prefix=ELF
// ELF: 177   E   L   F
// RUN: tilec compile %repo/examples/vadd.tile --emit ptx --arch sm_80 -o %t.vadd80.ptx
// RUN: ptxas -v -arch=sm_80 %t.vadd80.ptx -o %t.cubin 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/vadd.tile --emit ptx --arch sm_90a -o %t.vadd90.ptx
// RUN: ptxas -v -arch=sm_90a %t.vadd90.ptx -o %t.cubin 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/transpose.tile --emit ptx --arch sm_80 -o %t.tr80.ptx
// RUN: ptxas -v -arch=sm_80 %t.tr80.ptx -o %t.cubin 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/transpose.tile --emit ptx --arch sm_90a -o %t.tr90.ptx
// RUN: ptxas -v -arch=sm_90a %t.tr90.ptx -o %t.cubin 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/softmax.tile --emit ptx --arch sm_80 -o %t.sm80.ptx
// RUN: ptxas -v -arch=sm_80 %t.sm80.ptx -o %t.cubin 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/softmax.tile --emit ptx --arch sm_90a -o %t.sm90.ptx
// RUN: ptxas -v -arch=sm_90a %t.sm90.ptx -o %t.cubin 2>&1 | filecheck %s

// CHECK: Compiling entry function '{{vadd|transpose|softmax}}'
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
