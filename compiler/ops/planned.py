"""tilec.ops' planned calls: a call's launches kept per its inputs' signature, so that a call
repeating it (the same shapes, strides, dtypes, devices and 16-byte alignment of every tensor
input, the same absent inputs and the same scalars) skips what that signature decided when it
was first seen: the checks, the operands' plan, the views and the family's own signature and
choice (docs/runtime.md, "tilec.ops": planned calls).

The key holds everything the checks read (a tensor type planned before, each tensor's device,
dtype, shape, strides and alignment, which inputs are None, the scalars by type and value), so a
call that would fail one never finds a plan; its outputs (and buffers) are allocated each call
and launched only where their pointers are 16-byte aligned, as the first call's were."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tilec.runtime.family import Launch

# An input's stand-in for the kernels: a copy of it (its layout fixed by the signature, made
# each call) or, for an absent input, a constant; None: the input read as it is.
Prepare = Callable[[Any], Any] | None

LIMIT = 256  # keys kept before the table starts over
SCALARS = (bool, int, float, str, type(None))  # scalars a key takes by value
SCALAR = -1  # a step's slot for a scalar argument (no pointer)


class Step:
    """One launch of a plan: a family's `Launch`, the place in the call's pointers (the inputs'
    as prepared, then the new tensors') of each of its arguments (SCALAR for a scalar's), and
    its arguments, of which only the scalars are read."""

    __slots__ = ("args", "launch", "pointers")

    def __init__(self, launch: Launch, slots: tuple[int, ...], args: tuple[Any, ...]) -> None:
        assert len(slots) > 1, "itemgetter of one slot gives no tuple"
        self.launch, self.args = launch, args
        self.pointers = operator.itemgetter(*slots)  # the call's pointers -> the launch's


def first(news: tuple[Any, ...]) -> Any:
    """A plan's `result` by default: its first new tensor."""
    return news[0]


def _new_empty(shape: tuple[int, ...], tensors: tuple[Any, ...]) -> tuple[Any, ...]:
    return (tensors[0].new_empty(shape),)


def new_empty(shape: tuple[int, ...]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """A plan's `make` of one output: a new tensor of `shape` like the first input (its dtype,
    its device)."""
    return functools.partial(_new_empty, shape)


def constant(value: Any) -> Prepare:
    """A `prepare` reading `value` (a constant, kept alive by the plan) for an absent input."""
    return lambda absent: value


@dataclass(frozen=True)
class Plan:
    """What a planned call does: prepares its inputs (`copies`: (input, `Prepare`) where one is
    not read as it is), makes its new tensors from them (`make`: outputs, buffers, and pointers
    into them as ints), launches `steps` in order and returns `result` of the new tensors."""

    steps: tuple[Step, ...]
    make: Callable[[tuple[Any, ...]], tuple[Any, ...]]
    copies: tuple[tuple[int, Prepare], ...]
    result: Callable[[tuple[Any, ...]], Any]


class PlannedCalls:
    """Plans of tilec.ops calls, by op name and inputs' signature (one table per module)."""

    def __init__(self) -> None:
        self._calls: dict[tuple[Any, ...], Plan] = {}
        self._types: set[type] = set()  # the tensors' types planned (torch.Tensor)

    def _key(
        self, op: str, tensors: tuple[Any, ...], scalars: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], list[int]] | None:
        key: list[Any] = [op]
        for s in scalars:
            if type(s) not in SCALARS:
                return None  # a tensor's value, say: the checked path reads it
            key.append((type(s), s))
        ptrs: list[int] = []
        for t in tensors:
            if t is None:
                key.append(None)
                ptrs.append(0)
                continue
            if type(t) not in self._types:
                return None  # not a tensor type seen: the checked path says what is wrong
            ptr = t.data_ptr()
            key.append((t.shape, t.stride(), t.dtype, t.device, ptr % 16 == 0))
            ptrs.append(ptr)
        return tuple(key), ptrs

    def run(self, op: str, tensors: tuple[Any, ...], scalars: tuple[Any, ...] = ()) -> Any:
        """The result of `op` on `tensors` (None for an absent one) and `scalars`, launched as
        planned; None where no call of their signature was planned (or a new tensor is not
        aligned as the plan's were)."""
        found = self._key(op, tensors, scalars)
        plan = self._calls.get(found[0]) if found is not None else None
        if plan is None:
            return None
        ptrs = found[1]
        kept = []  # the copies, alive until the launches are issued
        for i, prepare in plan.copies:
            kept.append(prepare(tensors[i]))  # type: ignore[misc]
            ptrs[i] = kept[-1].data_ptr()
            if ptrs[i] % 16:
                return None
        news = plan.make(tensors)
        for t in news:
            ptrs.append(t if type(t) is int else t.data_ptr())
            if ptrs[-1] % 16:
                return None
        ptrs.append(0)  # SCALAR's place
        for step in plan.steps:
            step.launch(step.pointers(ptrs), step.args)
        return plan.result(news)

    def remember(
        self,
        op: str,
        tensors: tuple[Any, ...],
        scalars: tuple[Any, ...],
        steps: tuple[tuple[Launch | None, tuple[int, ...], tuple[Any, ...]], ...],
        make: Callable[[tuple[Any, ...]], tuple[Any, ...]],
        prepare: tuple[Prepare, ...] = (),
        result: Callable[[tuple[Any, ...]], Any] = first,
    ) -> None:
        """Keep a plan (`Plan`, its steps' launches those a family's `launch` gave for this
        call: none may be None) for calls of `op` with the signature of `tensors` and
        `scalars`. The call being remembered made its new tensors as `make` does, aligned."""
        if any(launch is None for launch, _, _ in steps):
            return  # a launch the family does not plan: each call goes through the family
        self._types.update(type(t) for t in tensors if t is not None)
        found = self._key(op, tensors, scalars)
        if found is None:
            return
        if len(self._calls) >= LIMIT:
            self._calls.clear()
        kept = tuple(Step(launch, slots, args) for launch, slots, args in steps)  # type: ignore[arg-type]
        copies = tuple((i, p) for i, p in enumerate(prepare) if p is not None)
        self._calls[found[0]] = Plan(kept, make, copies, result)

    def __len__(self) -> int:
        return len(self._calls)
