// convert-layout-to-arith on a swizzle composed with a nonzero offset (Sw<3,3,3> o 40 o L: a
// slice of a swizzled buffer at element 40): the offset is added to the layout's value BEFORE
// the swizzle's xor reads its bits (test/unit/test_layout_offset_lowering.py checks every index).
// RUN: tile-opt -p convert-layout-to-arith --split-input-file %s | filecheck %s

// offset = ((i mod 8) << 6) + (i div 8) + 40, then offset ^ ((offset & 448) >> 3).
// CHECK-LABEL: func.func @offset_then_swizzle(
// CHECK-SAME: %[[I:[^:]*]]: index
// CHECK: %[[R:.*]] = arith.andi %[[I]], %{{.*}} : index
// CHECK: %[[Q:.*]] = arith.shrui %[[I]], %{{.*}} : index
// CHECK: %[[S:.*]] = arith.shli %[[R]], %{{.*}} : index
// CHECK: %[[L:.*]] = arith.addi %[[S]], %[[Q]] : index
// CHECK: %[[C40:.*]] = arith.constant 40 : index
// CHECK: %[[OFF:.*]] = arith.addi %[[L]], %[[C40]] : index
// CHECK: %[[MASK:.*]] = arith.constant 448 : index
// CHECK: %[[Y:.*]] = arith.andi %[[OFF]], %[[MASK]] : index
// CHECK: %[[Z:.*]] = arith.shrui %[[Y]], %{{.*}} : index
// CHECK: %[[X:.*]] = arith.xori %[[OFF]], %[[Z]] : index
// CHECK: return %[[X]]
func.func @offset_then_swizzle(%i: index) -> index {
  %l = "layout.make"() : () -> !layout.layout<"Sw<3,3,3> o 40 o (8,64):(64,1)">
  %o = "layout.apply"(%l, %i) : (!layout.layout<"Sw<3,3,3> o 40 o (8,64):(64,1)">, index) -> index
  return %o : index
}

// -----

// crd2idx of the 64-byte swizzle at a stage offset of 4104 elements: the sum reaches the xor.
// CHECK-LABEL: func.func @crd_offset_then_swizzle(
// CHECK-SAME: %[[R:[^:]*]]: index, %[[C:[^:]*]]: index
// CHECK: %[[S:.*]] = arith.shli %[[R]], %{{.*}} : index
// CHECK: %[[L:.*]] = arith.addi %[[S]], %[[C]] : index
// CHECK: %[[K:.*]] = arith.constant 4104 : index
// CHECK: %[[OFF:.*]] = arith.addi %[[L]], %[[K]] : index
// CHECK: %[[MASK:.*]] = arith.constant 192 : index
// CHECK: %[[Y:.*]] = arith.andi %[[OFF]], %[[MASK]] : index
// CHECK: %[[Z:.*]] = arith.shrui %[[Y]], %{{.*}} : index
// CHECK: %[[X:.*]] = arith.xori %[[OFF]], %[[Z]] : index
// CHECK: return %[[X]]
func.func @crd_offset_then_swizzle(%r: index, %c: index) -> index {
  %l = "layout.make"() : () -> !layout.layout<"Sw<2,3,3> o 4104 o (8,32):(32,1)">
  %o = "layout.crd2idx"(%l, %r, %c) : (!layout.layout<"Sw<2,3,3> o 4104 o (8,32):(32,1)">, index, index) -> index
  return %o : index
}
