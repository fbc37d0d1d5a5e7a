"""Passes: the base class every tilec pass derives from, and the registration decorator.

A pass is one small class with a kebab-case `name`, its options as dataclass fields and a
`run(module)` method. The first line of its docstring is the summary `--list-passes` prints.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from mlir import ir

from tilec.binding import PassFailure, emit


@dataclasses.dataclass
class Pass:
    """Base class of tilec passes (subclasses are dataclasses; fields are pass options)."""

    name: ClassVar[str] = ""

    @classmethod
    def summary(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""

    @classmethod
    def options(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls))

    def run(self, module: ir.Operation) -> None:
        raise NotImplementedError

    # Helpers for pass bodies.
    @staticmethod
    def error(op: ir.Operation | ir.OpView, message: str) -> None:
        """Emit a located error at `op` (the pass continues; call `fail()` to stop)."""
        op.location.emit_error(message)

    @staticmethod
    def warning(op: ir.Operation | ir.OpView, message: str) -> None:
        """Emit a located warning at `op` (tile-opt prints it and --verify-diagnostics checks
        it, like any MLIR diagnostic; tilec compile prints it with the source line)."""
        emit(op.location, "warning", message)

    @staticmethod
    def remark(op: ir.Operation | ir.OpView, message: str) -> None:
        """Emit a located remark at `op`."""
        emit(op.location, "remark", message)

    @staticmethod
    def fail() -> None:
        raise PassFailure()


# The one table of passes: name -> class. Built-ins register in `tilec.passes`, plugins
# register through `register` when `--load-pass-plugin` imports them.
PASSES: dict[str, type[Pass]] = {}


def register(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make `cls` runnable by name from every pipeline and tool."""
    if not dataclasses.is_dataclass(cls) or "__dataclass_fields__" not in cls.__dict__:
        cls = dataclasses.dataclass(cls)
    if not cls.name or cls.name != cls.name.lower() or " " in cls.name:
        raise ValueError(f"pass {cls.__qualname__} needs a kebab-case `name`, got {cls.name!r}")
    existing = PASSES.get(cls.name)
    if existing is not None and existing is not cls:
        raise ValueError(f"pass name '{cls.name}' is already registered by {existing.__module__}")
    PASSES[cls.name] = cls
    return cls
