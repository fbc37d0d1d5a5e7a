"""Pipeline strings mixing tilec (Python) passes and upstream MLIR passes."""

import dataclasses

import pytest
from mlir import ir

from tilec.context import make_context
from tilec.passes import PASSES, Pass, register
from tilec.pipeline import PipelineError, parse_element, run_pipeline, split_top_level


def test_split_top_level_respects_nesting_and_strips_builtin_module() -> None:
    spec = "builtin.module(a{x=1 y=2},gpu.module(b, c),d)"
    assert split_top_level(spec) == ["a{x=1 y=2}", "gpu.module(b, c)", "d"]
    assert split_top_level("  ") == []
    with pytest.raises(PipelineError, match="unbalanced"):
        split_top_level("a,(b")
    with pytest.raises(PipelineError, match="unbalanced"):
        split_top_level("a),b")


def test_parse_element_name_and_options() -> None:
    e = parse_element("layout-fold{max-size=4 verbose=true}")
    assert (e.name, e.options) == ("layout-fold", "max-size=4 verbose=true")
    assert parse_element("gpu.module(cse)").name == "gpu.module"


@register
@dataclasses.dataclass
class _RecordNames(Pass):
    """Test pass: append the names of top-level ops to `seen`, tagged with `tag`."""

    name = "test-record-names"
    tag: str = "t"
    repeat: int = 1
    seen = []  # class-level: the test reads what the pass saw

    def run(self, module: ir.Operation) -> None:
        for op in module.regions[0].blocks[0].operations:
            _RecordNames.seen.extend([f"{self.tag}:{op.operation.name}"] * self.repeat)


@register
class _FailingPass(Pass):
    """Test pass: report an error at the first function and fail."""

    name = "test-fail"

    def run(self, module: ir.Operation) -> None:
        self.error(module.regions[0].blocks[0].operations[0], "this op is not allowed")
        self.fail()


@register
class _BuggyPass(Pass):
    """Test pass: raises an ordinary exception (an internal bug)."""

    name = "test-buggy"

    def run(self, module: ir.Operation) -> None:
        raise KeyError("oops")


SOURCE = """
func.func @f(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %0 = arith.addi %a, %c0 : i32
  return %0 : i32
}
"""


def test_tilec_and_mlir_passes_mix_in_order() -> None:
    _RecordNames.seen.clear()
    ctx = make_context()
    with ctx:
        module = ir.Module.parse(SOURCE)
        run_pipeline(module, "test-record-names{tag=a repeat=2},canonicalize,test-record-names")
    assert _RecordNames.seen == ["a:func.func", "a:func.func", "t:func.func"]
    assert "arith.addi" not in str(module)  # canonicalize ran between the two


def test_bad_option_and_unknown_pass_raise_pipeline_errors() -> None:
    ctx = make_context()
    with ctx:
        module = ir.Module.parse(SOURCE)
        with pytest.raises(PipelineError, match="has no option 'colour'"):
            run_pipeline(module, "test-record-names{colour=red}")
        with pytest.raises(PipelineError, match="bad value 'many'"):
            run_pipeline(module, "test-record-names{repeat=many}")
        with pytest.raises(PipelineError, match="does not refer to a registered pass"):
            run_pipeline(module, "no-such-pass")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("test-fail", "this op is not allowed"),
        ("test-buggy", "internal error in pass 'test-buggy'"),
    ],
)
def test_failing_python_passes_become_located_mlir_errors(spec: str, message: str) -> None:
    ctx = make_context()
    with ctx:
        module = ir.Module.parse(SOURCE)
        with pytest.raises(ir.MLIRError) as info:
            run_pipeline(module, spec)
        diags = info.value.error_diagnostics
        assert any(message in d.message for d in diags)
        # The context stays usable after a failing Python pass.
        run_pipeline(module, "canonicalize")


def test_duplicate_registration_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):

        @register
        class Other(Pass):
            """Clash."""

            name = "test-fail"

    assert PASSES["test-fail"] is _FailingPass
