// ptxas accepts the PTX of every memory-bound example for sm_80 and sm_90a, without spills,
// stack or local memory.
// REQUIRES: ptxas
// The cubin stage runs ptxas itself and writes an ELF.
// RUN: tilec compile %repo/examples/vadd.tile --emit cubin -o %t.cubin && od -c -N 4 %t.cubin | filecheck %s --check-prefix=ELF
// ELF: 177   E   L   F
// RUN: tilec compile %repo/examples/vadd.tile --emit ptx --arch sm_80 --resource-usage -o %t.vadd80.ptx 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/vadd.tile --emit ptx --arch sm_90a --resource-usage -o %t.vadd90.ptx 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/transpose.tile --emit ptx --arch sm_80 --resource-usage -o %t.tr80.ptx 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/transpose.tile --emit ptx --arch sm_90a --resource-usage -o %t.tr90.ptx 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/softmax.tile --emit ptx --arch sm_80 --resource-usage -o %t.sm80.ptx 2>&1 | filecheck %s
// RUN: tilec compile %repo/examples/softmax.tile --emit ptx --arch sm_90a --resource-usage -o %t.sm90.ptx 2>&1 | filecheck %s

// The figures ptxas -v gave the compile (its contract asks ptxas once; --resource-usage
// prints that answer): no spills, no stack.
// CHECK: kernel {{ +}}registers{{ +}}spill stores B{{ +}}spill loads B{{ +}}shared B{{ +}}stack B{{ +}}barriers
// CHECK-NEXT: {{vadd|transpose|softmax}} {{ +[0-9]+ +0 +0 +[0-9]+ +0 +[0-9]+$}}
