"""tilec.ops' planned calls: a product's launch kept per its operands' signature, so that a call
repeating it (the same shapes, strides, dtypes, devices and 16-byte alignment of both operands,
no epilogue) skips what that signature decided when it was first seen: the checks, the operand
plan, the views and the family's own signature and choice (docs/runtime.md, "tilec.ops").

The key holds everything the checks read (a tensor type planned before, each operand's device,
dtype, shape, strides and alignment), so a call that would fail one never finds a launch; the
output is allocated each call and launched only where its pointer is 16-byte aligned, as the
planned launch's binding required."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilec.runtime.family import Launch

Prepare = Callable[[Any], Any] | None  # an operand's copy for the kernel (None: read as it is)

LIMIT = 256  # keys kept before the table starts over


class PlannedCalls:
    """Launches of products C = f(A, B): the operands read as they are, or copied as the plan
    said (the copy's layout is fixed by the signature; it is made each call)."""

    def __init__(self) -> None:
        self._calls: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._types: set[type] = set()  # the operands' types planned (torch.Tensor)

    def _key(self, op: str, a: Any, b: Any) -> tuple[tuple[Any, ...], int, int] | None:
        if type(a) not in self._types or type(b) not in self._types:
            return None  # not a tensor type seen: the checked path says what is wrong
        pa, pb = a.data_ptr(), b.data_ptr()
        key = (op, a.shape, a.stride(), a.dtype, a.device, pa % 16 == 0,
               b.shape, b.stride(), b.dtype, b.device, pb % 16 == 0)  # fmt: skip
        return key, pa, pb

    def run(self, op: str, a: Any, b: Any) -> Any:
        """The output of `op` on a and b, launched as planned; None where no call of their
        signature was planned (or the new output is not aligned as the plan's was)."""
        found = self._key(op, a, b)
        entry = self._calls.get(found[0]) if found is not None else None
        if entry is None:
            return None
        launch, shape, args, prepare_a, prepare_b = entry
        ptrs = [found[1], found[2], 0]
        kept = []  # the copies, alive until the launch is issued
        for i, (operand, prepare) in enumerate(((a, prepare_a), (b, prepare_b))):
            if prepare is not None:
                kept.append(prepare(operand))
                ptrs[i] = kept[-1].data_ptr()
        out = a.new_empty(shape)
        ptrs[2] = out.data_ptr()
        if any(ptr % 16 for ptr in ptrs):
            return None
        launch(ptrs, args)
        return out

    def remember(self, op: str, a: Any, b: Any, launch: Launch | None, out: Any,
                 args: tuple[Any, ...], prepare: tuple[Prepare, Prepare] = (None, None),
                 ) -> None:  # fmt: skip
        """Keep `launch` (a family's, for the kernel's operands, a's and b's memory or the
        copies `prepare` makes of them, and a new output like `out`) for calls of `op` with a's
        and b's signature; `args` gives the launch's scalars (in their argument positions)."""
        if launch is None:
            return
        self._types.update((type(a), type(b)))
        found = self._key(op, a, b)
        assert found is not None
        if len(self._calls) >= LIMIT:
            self._calls.clear()
        self._calls[found[0]] = (launch, tuple(out.shape), args, *prepare)

    def __len__(self) -> int:
        return len(self._calls)
