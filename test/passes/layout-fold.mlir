// layout-fold: static layout ops evaluate with the algebra; dynamic parts stay SSA values.
// RUN: tile-opt --allow-unregistered-dialect -p layout-fold --split-input-file %s | filecheck %s
// RUN: tile-opt -p layout-fold --split-input-file --verify-diagnostics %s.bad

// CuTe's composition example: (4,8):(8,1) o (2,2):(1,4) = (2,2):(8,1).
// CHECK-LABEL: func.func @compose(
// CHECK-SAME: %[[I:.*]]: index, %[[J:.*]]: index
// CHECK-NOT: layout.composition
// CHECK: %[[C:.*]] = "layout.make"() : () -> !layout.layout<"(2,2):(8,1)">
// CHECK: %[[FOUR:.*]] = arith.constant 4 : index
// CHECK: %[[NINE:.*]] = arith.constant 9 : index
// CHECK: %[[Y:.*]] = "layout.crd2idx"(%[[C]], %[[I]], %[[J]])
// CHECK: return %[[FOUR]], %[[NINE]], %[[Y]]
func.func @compose(%i: index, %j: index) -> (index, index, index) {
  %a = "layout.make"() : () -> !layout.layout<"(4,8):(8,1)">
  %b = "layout.make"() : () -> !layout.layout<"(2,2):(1,4)">
  %c = "layout.composition"(%a, %b) : (!layout.layout<"(4,8):(8,1)">, !layout.layout<"(2,2):(1,4)">) -> !layout.layout<"(2,2):(8,1)">
  %n = "layout.size"(%c) : (!layout.layout<"(2,2):(8,1)">) -> index
  %c1 = arith.constant 1 : index
  %x = "layout.crd2idx"(%c, %c1, %c1) : (!layout.layout<"(2,2):(8,1)">, index, index) -> index
  %y = "layout.crd2idx"(%c, %i, %j) : (!layout.layout<"(2,2):(8,1)">, index, index) -> index
  return %n, %x, %y : index, index, index
}

// -----

// Divide and product chains fold; the declared result type may be left open with `?`.
// CHECK-LABEL: func.func @divide_product(
// CHECK: "layout.make"() : () -> !layout.layout<"(4,(2,4)):(2,(1,8))">
// CHECK: "layout.make"() : () -> !layout.layout<"((2,3),(2,4)):((1,4),(2,12))">
// CHECK: arith.constant 32 : index
// CHECK-NOT: layout.logical_divide
// CHECK-NOT: layout.blocked_product
func.func @divide_product() -> index {
  %a = "layout.make"() : () -> !layout.layout<"(4,8):(1,4)">
  %t = "layout.make"() : () -> !layout.layout<"4:2">
  %d = "layout.logical_divide"(%a, %t) : (!layout.layout<"(4,8):(1,4)">, !layout.layout<"4:2">) -> !layout.layout<"?">
  %x = "layout.make"() : () -> !layout.layout<"(2,2):(1,2)">
  %y = "layout.make"() : () -> !layout.layout<"(3,4):(1,3)">
  %p = "layout.blocked_product"(%x, %y) : (!layout.layout<"(2,2):(1,2)">, !layout.layout<"(3,4):(1,3)">) -> !layout.layout<"?">
  %n = "layout.cosize"(%d) : (!layout.layout<"?">) -> index
  "test.use"(%d, %p) : (!layout.layout<"?">, !layout.layout<"?">) -> ()
  return %n : index
}

// -----

// A layout.make fed by constants becomes static; one with a runtime operand stays.
// CHECK-LABEL: func.func @make_constants(
// CHECK-SAME: %[[M:.*]]: index
// CHECK: "layout.make"() : () -> !layout.layout<"(128,64):(64,1)">
// CHECK: "layout.make"(%[[M]]) : (index) -> !layout.layout<"(?,64):(64,1)">
func.func @make_constants(%m: index) {
  %c128 = arith.constant 128 : index
  %a = "layout.make"(%c128) : (index) -> !layout.layout<"(?,64):(64,1)">
  %b = "layout.make"(%m) : (index) -> !layout.layout<"(?,64):(64,1)">
  "test.use"(%a, %b) : (!layout.layout<"(?,64):(64,1)">, !layout.layout<"(?,64):(64,1)">) -> ()
  return
}

// -----

// A swizzle folds into a composed layout; crd2idx through it applies the xor.
// Sw<3,3,3> o (8,64):(64,1) at (1,0): offset 64 -> 64 ^ (64 >> 3) = 72.
// CHECK-LABEL: func.func @swizzle(
// CHECK: arith.constant 72 : index
// CHECK-NOT: layout.swizzle
func.func @swizzle() -> index {
  %a = "layout.make"() : () -> !layout.layout<"(8,64):(64,1)">
  %s = "layout.swizzle"(%a) {bits = 3 : i32, base = 3 : i32, shift = 3 : i32} : (!layout.layout<"(8,64):(64,1)">) -> !layout.layout<"?">
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = "layout.crd2idx"(%s, %c1, %c0) : (!layout.layout<"?">, index, index) -> index
  return %x : index
}

// -----

// slice keeps the `_` modes; the fixed coordinate's value (here a runtime one) only moves the
// offset, so the sliced layout folds even when the coordinate is dynamic.
// CHECK-LABEL: func.func @slice(
// CHECK: "layout.make"() : () -> !layout.layout<"(4,8):(16,2)">
// CHECK: "layout.make"() : () -> !layout.layout<"((2,4)):((1,16))">
// CHECK-NOT: layout.slice
func.func @slice(%i: index) {
  %a = "layout.make"() : () -> !layout.layout<"((2,4),8):((1,16),2)">
  %s = "layout.slice"(%a, %i) {pattern = "((?,_),_)"} : (!layout.layout<"((2,4),8):((1,16),2)">, index) -> !layout.layout<"?">
  %t = "layout.slice"(%a, %i) {pattern = "(_,?)"} : (!layout.layout<"((2,4),8):((1,16),2)">, index) -> !layout.layout<"?">
  "test.use"(%s, %t) : (!layout.layout<"?">, !layout.layout<"?">) -> ()
  return
}

// -----

// Vector widths from the layouts: f16 (8,64) row-major viewed as 16-byte vectors (upcast by 8),
// and how many elements a row-major and a column-major view share contiguously.
// CHECK-LABEL: func.func @vectors(
// CHECK: "layout.make"() : () -> !layout.layout<"(8,8):(8,1)">
// CHECK: "layout.make"() : () -> !layout.layout<"(8,16):(16,1)">
// CHECK-DAG: arith.constant 512 : index
// CHECK-DAG: arith.constant 1 : index
func.func @vectors() -> (index, index) {
  %r = "layout.make"() : () -> !layout.layout<"(8,64):(64,1)">
  %c = "layout.make"() : () -> !layout.layout<"(8,64):(1,8)">
  %s = "layout.make"() : () -> !layout.layout<"(8,8):(8,1)">
  %u = "layout.upcast"(%r) {factor = 8 : i64} : (!layout.layout<"(8,64):(64,1)">) -> !layout.layout<"?">
  %d = "layout.downcast"(%s) {factor = 2 : i64} : (!layout.layout<"(8,8):(8,1)">) -> !layout.layout<"?">
  %v = "layout.max_common_vector"(%r, %r) : (!layout.layout<"(8,64):(64,1)">, !layout.layout<"(8,64):(64,1)">) -> index
  %w = "layout.max_common_vector"(%r, %c) : (!layout.layout<"(8,64):(64,1)">, !layout.layout<"(8,64):(1,8)">) -> index
  "test.use"(%u, %d) : (!layout.layout<"?">, !layout.layout<"?">) -> ()
  return %v, %w : index, index
}
