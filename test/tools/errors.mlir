// Bad pipelines and bad flags give one clear error and exit code 1, never a traceback.
// RUN: not tile-opt -p "no-such-pass" %s 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tile-opt -p "tile-verify{nope=1}" %s 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not tile-opt -p "canonicalize,(" %s 2>&1 | filecheck %s --check-prefix=BRACKET
// RUN: not tile-opt %s.missing 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not tile-opt --load-pass-plugin %s.missing.py %s 2>&1 | filecheck %s --check-prefix=PLUGIN
// RUN: tile-opt --list-passes | filecheck %s --check-prefix=LIST

// UNKNOWN: error: invalid pass pipeline: {{.*}}'no-such-pass' does not refer to a registered pass
// UNKNOWN-NOT: Traceback
// OPTION: error: invalid pass pipeline: pass 'tile-verify' has no option 'nope'
// BRACKET: error: invalid pass pipeline: unbalanced
// MISSING: tile-opt: error: cannot read
// PLUGIN: error: pass plugin '{{.*}}.missing.py' does not exist
// LIST: tilec passes:
// LIST: tile-verify {{.*}}Check layout SPEC strings
func.func @f() {
  return
}
