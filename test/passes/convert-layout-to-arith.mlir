// convert-layout-to-arith: layout queries become index math; powers of two use shifts and
// masks (never div/rem), swizzles xor/shift/and, dynamic entries their SSA operands.
// RUN: tile-opt -p layout-fold,convert-layout-to-arith --split-input-file %s | filecheck %s
// RUN: tile-opt -p convert-layout-to-arith --split-input-file --verify-diagnostics %s.bad

// Row-major (8,?) tile with a runtime leading dimension: apply(i) = (i mod 8) * ld + i div 8.
// CHECK-LABEL: func.func @apply_pow2(
// CHECK-SAME: %[[I:[^:]*]]: index, %[[N:[^:]*]]: index, %[[LD:[^:]*]]: index
// CHECK-NOT: arith.divui
// CHECK-NOT: arith.remui
// CHECK: %[[C7:.*]] = arith.constant 7 : index
// CHECK: %[[R:.*]] = arith.andi %[[I]], %[[C7]] : index
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[Q:.*]] = arith.shrui %[[I]], %[[C3]] : index
// CHECK: %[[M:.*]] = arith.muli %[[R]], %[[LD]] : index
// CHECK: %[[O:.*]] = arith.addi %[[M]], %[[Q]] : index
// CHECK: return %[[O]]
// CHECK-NOT: layout.
func.func @apply_pow2(%i: index, %n: index, %ld: index) -> index {
  %a = "layout.make"(%n, %ld) : (index, index) -> !layout.layout<"(8,?):(?,1)">
  %y = "layout.apply"(%a, %i) : (!layout.layout<"(8,?):(?,1)">, index) -> index
  return %y : index
}

// -----

// The 128-byte f16 swizzle: offset = (r << 6) + c, then offset ^ ((offset & 448) >> 3).
// CHECK-LABEL: func.func @swizzled(
// CHECK-SAME: %[[R:[^:]*]]: index, %[[C:[^:]*]]: index
// CHECK: %[[S:.*]] = arith.shli %[[R]], %{{.*}} : index
// CHECK: %[[OFF:.*]] = arith.addi %[[S]], %[[C]] : index
// CHECK: %[[MASK:.*]] = arith.constant 448 : index
// CHECK: %[[Y:.*]] = arith.andi %[[OFF]], %[[MASK]] : index
// CHECK: %[[Z:.*]] = arith.shrui %[[Y]], %{{.*}} : index
// CHECK: %[[X:.*]] = arith.xori %[[OFF]], %[[Z]] : index
// CHECK: return %[[X]]
func.func @swizzled(%r: index, %c: index) -> index {
  %a = "layout.make"() : () -> !layout.layout<"(8,64):(64,1)">
  %s = "layout.swizzle"(%a) {bits = 3 : i32, base = 3 : i32, shift = 3 : i32} : (!layout.layout<"(8,64):(64,1)">) -> !layout.layout<"?">
  %o = "layout.crd2idx"(%s, %r, %c) : (!layout.layout<"?">, index, index) -> index
  return %o : index
}

// -----

// The swizzle as a function of a buffer's elements, as convert-tile-to-gpu addresses a swizzled
// shared buffer: the index passes through unchanged into the xor; the make dies with its use.
// CHECK-LABEL: func.func @swizzle_function(
// CHECK-SAME: %[[I:[^:]*]]: index
// CHECK-NEXT: %[[MASK:.*]] = arith.constant 448 : index
// CHECK-NEXT: %[[Y:.*]] = arith.andi %[[I]], %[[MASK]] : index
// CHECK-NEXT: %[[SH:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[Z:.*]] = arith.shrui %[[Y]], %[[SH]] : index
// CHECK-NEXT: %[[X:.*]] = arith.xori %[[I]], %[[Z]] : index
// CHECK-NEXT: return %[[X]]
func.func @swizzle_function(%i: index) -> index {
  %l = "layout.make"() : () -> !layout.layout<"Sw<3,3,3> o 0 o 8192:1">
  %o = "layout.apply"(%l, %i) : (!layout.layout<"Sw<3,3,3> o 0 o 8192:1">, index) -> index
  return %o : index
}

// -----

// A shape that is not a power of two needs div/rem; size of a dynamic layout multiplies.
// CHECK-LABEL: func.func @apply_odd(
// CHECK: arith.remui %{{.*}}, %{{.*}} : index
// CHECK: arith.divui %{{.*}}, %{{.*}} : index
// CHECK: arith.muli %{{.*}}, %{{.*}} : index
// CHECK: arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[SZ:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: return %{{.*}}, %[[SZ]]
func.func @apply_odd(%i: index, %m: index) -> (index, index) {
  %a = "layout.make"(%m) : (index) -> !layout.layout<"(6,?):(1,6)">
  %y = "layout.apply"(%a, %i) : (!layout.layout<"(6,?):(1,6)">, index) -> index
  %n = "layout.size"(%a) : (!layout.layout<"(6,?):(1,6)">) -> index
  return %y, %n : index, index
}

// -----

// cosize with a static negative stride counts |d|: (?,64):(-64,1) spans (n-1)*64 + 63 + 1.
// CHECK-LABEL: func.func @cosize_negative(
// CHECK-SAME: %[[N:[^:]*]]: index
// CHECK: %[[M:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK-NEXT: %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT: %[[S:.*]] = arith.shli %[[M]], %[[C6]] : index
// CHECK-NEXT: %[[C63:.*]] = arith.constant 63 : index
// CHECK-NEXT: %[[T:.*]] = arith.addi %[[S]], %[[C63]] : index
// CHECK-NOT: -64
// CHECK: return
func.func @cosize_negative(%n: index) -> index {
  %a = "layout.make"(%n) : (index) -> !layout.layout<"(?,64):(-64,1)">
  %c = "layout.cosize"(%a) : (!layout.layout<"(?,64):(-64,1)">) -> index
  return %c : index
}
