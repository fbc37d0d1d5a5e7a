// --verify-diagnostics as mlir-opt has it: every diagnostic of the parser, the verifier and
// each pass (errors, warnings, remarks, notes) is matched against the expected-* annotations by
// MLIR's rules, and the IR of the chunks that succeed is printed as usual.
// RUN: tile-opt -split-input-file -verify-diagnostics %s | filecheck %s --check-prefix=IR
// RUN: tile-opt --split-input-file --verify-diagnostics=only-expected %s | filecheck %s --check-prefix=IR
// A changed expectation fails, saying which diagnostic was unexpected and which expectation
// was not met (at the annotation, with its line and a caret).
// RUN: sed 's/undeclared SSA value/something else/' %s > %t.mlir
// RUN: not tile-opt -split-input-file -verify-diagnostics %t.mlir 2>&1 | filecheck %s --check-prefix=WRONG
// A diagnostic of another severity than expected is a near miss, reported as such.
// RUN: sed 's/expected-error @below {{.arith.addi. op requires/expected-warning @below {{'"'"'arith.addi'"'"' op requires/' %s > %t.sev.mlir
// RUN: not tile-opt -split-input-file -verify-diagnostics %t.sev.mlir 2>&1 | filecheck %s --check-prefix=SEVERITY
// Without the flag, diagnostics are printed where mlir-opt prints them: in the chunk's buffer,
// 'within split at FILE:LINE offset ', lines counted from the chunk's first line.
// RUN: not tile-opt -split-input-file %s 2>&1 | filecheck %s --check-prefix=PLAIN

// IR-LABEL: func.func @fine(
// IR: // -----

// WRONG: verify-diagnostics.mlir.tmp.mlir:34 offset :5:10: error: unexpected error: use of undeclared SSA value name
// WRONG: error: expected error "use of something else" was not produced
// WRONG-NEXT: {{^}}  // expected-{{error}} @+1 {{[{][{]}}use of something else{{[}][}]}}
// WRONG-NEXT: {{^}}     ^

// SEVERITY: error: 'error' diagnostic emitted when expecting a 'warning'

// PLAIN: within split at {{.*}}verify-diagnostics.mlir:34 offset :5:10: error: use of undeclared SSA value name
// PLAIN-NEXT: {{^}}  return %x : i32
// PLAIN-NEXT: {{^}}         ^
func.func @fine(%a: i32) -> i32 {
  return %a : i32
}

// -----

func.func @undeclared() -> i32 {
  // expected-error @+1 {{use of undeclared SSA value}}
  return %x : i32
}

// -----

func.func @below_and_above(%a: i32) {
  // expected-error @below {{'arith.addi' op requires the same type for all operands and results}}
  %0 = "arith.addi"(%a, %a) : (i32, i32) -> i64
  return
}

// -----

func.func @above(%a: i32) {
  %0 = "arith.subi"(%a, %a) : (i32, i32) -> i64
  // expected-error @above {{'arith.subi' op requires the same type}}
  return
}

// -----

func.func @regex(%a: i32) {
  // expected-error-re @+1 {{'arith.{{[a-z]+}}' op requires the same type}}
  %0 = "arith.muli"(%a, %a) : (i32, i32) -> i64
  return
}

// -----

// Two annotations for one line, and a note located four lines above its annotation.
func.func @dup() {
  return
}
// expected-error @+2 {{redefinition of symbol named 'dup'}}
// expected-note @-4 {{see existing symbol definition here}}
func.func @dup() {
  return
}

// -----

// A diagnostic without a file location.
func.func @nowhere(%a: i32) {
  // expected-error @unknown {{'arith.andi' op requires the same type}}
  %0 = "arith.andi"(%a, %a) : (i32, i32) -> i64 loc(unknown)
  return
}
