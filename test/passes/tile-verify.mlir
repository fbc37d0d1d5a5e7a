// tile-verify: layout SPEC strings must parse; layout.make needs one operand per `?`.
// RUN: tile-opt -p tile-verify --split-input-file %s | filecheck %s
// RUN: tile-opt -p tile-verify --split-input-file --verify-diagnostics %s.bad
// RUN: not tile-opt -p tile-verify --split-input-file %s.bad 2>&1 | filecheck %s --check-prefix=ERR

// Well-formed layouts (static, nested, dynamic, swizzled) pass through unchanged.
// CHECK-LABEL: func.func @ok(
// CHECK: "layout.make"() : () -> !layout.layout<"((2,4),8):((1,16),2)">
// CHECK: "layout.make"(%{{.*}}, %{{.*}}) : (index, index) -> !layout.layout<"(?,8):(?,1)">
// CHECK: "layout.swizzle"
func.func @ok(%m: index, %ld: index) -> index {
  %a = "layout.make"() : () -> !layout.layout<"((2,4),8):((1,16),2)">
  %b = "layout.make"(%m, %ld) : (index, index) -> !layout.layout<"(?,8):(?,1)">
  %s = "layout.swizzle"(%a) {bits = 3 : i32, base = 3 : i32, shift = 3 : i32} : (!layout.layout<"((2,4),8):((1,16),2)">) -> !layout.layout<"swizzle<3,3,3> o ((2,4),8):((1,16),2)">
  %i = "layout.crd2idx"(%b, %m, %m) : (!layout.layout<"(?,8):(?,1)">, index, index) -> index
  return %i : index
}

// ERR: within split at {{.*}}tile-verify.mlir.bad:1 offset :4:8: error: malformed layout '(4,8):(8'
// ERR-NEXT: {{^}}  %a = "layout.make"() : () -> !layout.layout<"(4,8):(8">
// ERR-NEXT: {{^}}       ^

// -----

// Every example's tile IR passes (views' layouts included).
// RUN: tilec compile %repo/examples/vadd.tile --emit tile | tile-opt -p tile-verify | filecheck %s --check-prefix=VADD
// RUN: tilec compile %repo/examples/transpose.tile --emit tile | tile-opt -p tile-verify
// RUN: tilec compile %repo/examples/softmax.tile --emit tile | tile-opt -p tile-verify
// RUN: tilec compile %repo/examples/gemm_sm80.tile --emit tile | tile-opt -p layout-fold,tile-verify
// RUN: tilec compile %repo/examples/gemm_sm90.tile --emit tile | tile-opt -p layout-fold,tile-verify
// VADD: "tile.make_tensor"(%{{.*}}, %{{.*}}) {name = "x"} : (!llvm.ptr, index) -> !tile.tensor<f32, "global", "(?):(1)">
// VADD: "tile.store"
