"""Runtime: a call's signature, what a kernel's launch plans and a family's choices are keyed
by (shapes, strides, dtypes, devices and 16-byte alignment of its tensors; its scalars' types,
and the values of those a launch formula reads)."""

from __future__ import annotations

from typing import Any

from tilec.runtime.bundle import ScalarParam, TensorParam
from tilec.runtime.tensors import as_view


def _torch_tensor(value: Any) -> bool:
    module = type(value).__module__
    return module == "torch" or module.startswith("torch.")


def signs_alike(
    params: list[TensorParam | ScalarParam], others: list[TensorParam | ScalarParam]
) -> bool:
    """Whether `signature` keys a call to `params` as one to `others`: the same parameters with
    the same alignments (a variant's, or a family's, key then serves the kernel's plans)."""
    return [(p.name, getattr(p, "align", 0)) for p in params] == [
        (p.name, getattr(p, "align", 0)) for p in others
    ]


def signature(
    params: list[TensorParam | ScalarParam],
    args: tuple[Any, ...],
    keyed: frozenset[str] | set[str] = frozenset(),
) -> tuple[tuple[Any, ...], list[int], list[Any]]:
    """(key, tensor pointers, views kept alive) of a call to `params`; the key is () where the
    call cannot be planned (a host array to stage, a wrong argument count). The scalars named in
    `keyed` (integers a launch formula reads) count by value. A kernel's plans and a family's
    choices are both keyed by it (each through a `Signer` made once)."""
    return Signer(params, keyed)(args)


class Signer:
    """`signature` for calls to one parameter list, what it asks of each parameter decided
    once: a planned call's host cost is mostly this (a kernel's and a family's)."""

    __slots__ = ("aligns", "names")

    def __init__(
        self, params: list[TensorParam | ScalarParam], keyed: frozenset[str] | set[str]
    ) -> None:
        # Per parameter: a tensor's alignment in bytes; 0 a scalar counted by type, -1 by value.
        self.aligns = tuple(
            p.align if isinstance(p, TensorParam) else -1 if p.name in keyed else 0 for p in params
        )
        self.names = tuple(p.name for p in params)

    def __call__(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[int], list[Any]]:
        if len(args) != len(self.aligns):
            return (), [], []
        key: list[Any] = []
        ptrs: list[int] = []
        alive: list[Any] = []
        for align, name, value in zip(self.aligns, self.names, args, strict=True):
            if align <= 0:
                key.append((type(value), value) if align else type(value))
                ptrs.append(0)
            elif type(value) in _TORCH_TYPES or _newly_torch(value):
                ptr = value.data_ptr()  # get_device: an int (-1 on the CPU), cheaper than .device
                key.append(
                    (value.shape, value.stride(), value.dtype, value.get_device(),
                     ptr % align == 0)
                )  # fmt: skip
                ptrs.append(ptr)
            else:
                view = as_view(value, name)
                if view.host is not None:
                    return (), [], []
                alive.append(view)
                key.append(
                    (view.shape, view.strides, view.dtype, view.framework, view.device,
                     view.ptr % align == 0)
                )  # fmt: skip
                ptrs.append(view.ptr)
        return tuple(key), ptrs, alive


_TORCH_TYPES: set[type] = set()  # the torch tensor types seen: a set lookup for the next call


def _newly_torch(value: Any) -> bool:
    """Whether `value` is a torch tensor (its type is then remembered in _TORCH_TYPES)."""
    if not _torch_tensor(value):
        return False
    _TORCH_TYPES.add(type(value))
    return True
