// tilec compile takes the same plugins as tile-opt, and --pass-pipeline STAGE=PIPELINE
// replaces the pipeline producing one stage (here `gpu`, from a `lowered` input).
// RUN: tilec compile %s --from lowered --emit gpu --load-pass-plugin %repo/examples/passes/mul_to_shift.py --pass-pipeline "gpu=mul-to-shift,canonicalize" | filecheck %s
// RUN: tilec compile %s --from lowered --emit gpu --pass-pipeline "gpu=canonicalize" | filecheck %s --check-prefix=NOPLUGIN
// RUN: not tilec compile %s --from lowered --emit gpu --pass-pipeline "gpu=mul-to-shift" 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tilec compile %s --from lowered --emit gpu --pass-pipeline "nope=cse" 2>&1 | filecheck %s --check-prefix=BADSTAGE

// CHECK-LABEL: func.func @scale(
// CHECK: arith.shli %{{.*}}, %{{.*}} : index
// CHECK-NOT: arith.muli
// NOPLUGIN: arith.muli
// UNKNOWN: error: invalid pipeline for stage 'gpu': {{.*}}'mul-to-shift' does not refer to a registered pass
// BADSTAGE: error: --pass-pipeline expects STAGE=PIPELINE
func.func @scale(%i: index) -> index {
  %c8 = arith.constant 8 : index
  %0 = arith.muli %i, %c8 : index
  return %0 : index
}
