"""binding.op_id: a key for an op that survives changes to it. These MLIR bindings hash an
`Operation` by its contents (its operands among them), so a dict keyed by ops loses an op whose
operands change after it became a key: the in-place update of convert-tile-mma read stale values
that way, now and then. The test keeps both facts in view: should a bindings upgrade make the
hash stable, the first assertion says so."""

from __future__ import annotations

from mlir import ir

from tilec.binding import op_id, walk
from tilec.context import make_context


def test_an_op_keeps_its_id_when_its_operands_change() -> None:
    with make_context(allow_unregistered=True):
        module = ir.Module.parse(
            """
            %a = "test.a"() : () -> i32
            %b = "test.b"() : () -> i32
            "test.use"(%a) : (i32) -> ()
            """
        )
        ops: list[ir.Operation] = []
        walk(module.operation, ops.append)
        _, a, b, use = ops
        before = hash(use)
        ids = {op_id(use): "use"}
        use.operands[0] = b.results[0]
        # The contents changed, so did the hash: a dict keyed by the op looks in another slot
        # (and finds it only by chance, when that slot holds this very wrapper object).
        assert hash(use) != before
        assert ids[op_id(use)] == "use"
        again = next(iter(b.results[0].uses)).owner
        assert op_id(again) == op_id(use) and op_id(a) != op_id(use)
