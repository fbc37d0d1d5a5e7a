"""Passes: the base class every tilec pass derives from, and the registration decorator.

A pass is one small class with a kebab-case `name`, its options as dataclass fields and a
`run(module)` method. The first line of its docstring is the summary `--list-passes` prints.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import ClassVar

from mlir import ir

from tilec.binding import PassFailure, emit, functions
from tilec.lowering import LoweringError


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

    def each_kernel(self, module: ir.Operation, fn: Callable[[ir.Operation], object]) -> None:
        """Call `fn` on every tile kernel (a `func.func` with `tile.kernel`) of `module`. A
        `LoweringError` it raises is reported at its op and the next kernel is tried, so each
        kernel's first error is reported; then the pass fails if any kernel did."""
        failed = False
        for func in functions(module):
            if "tile.kernel" not in func.attributes:
                continue
            try:
                fn(func)
            except LoweringError as err:
                self.error(err.op, str(err))
                failed = True
        if failed:
            self.fail()


class Registry(MutableMapping[str, type[Pass]]):
    """The one table of passes: name -> class. A built-in pass's module (`builtin`, filled by
    `tilec.passes`) is imported when its name is first looked up, so a tool that runs two of
    them (or none: `tile-opt -cse`) does not import the other eight; iterating loads them all.
    Plugins register through `register` when `--load-pass-plugin` imports them."""

    def __init__(self) -> None:
        self.builtin: dict[str, str] = {}  # name -> module under tilec.passes
        self._loaded: dict[str, type[Pass]] = {}

    def load(self, name: str) -> None:
        module = self.builtin.get(name)
        if module is not None and name not in self._loaded:
            importlib.import_module(f"tilec.passes.{module}")

    def load_all(self) -> None:
        for name in self.builtin:
            self.load(name)

    def loaded(self, name: str) -> type[Pass] | None:
        return self._loaded.get(name)

    def __getitem__(self, name: str) -> type[Pass]:
        self.load(name)
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._loaded or name in self.builtin

    def __iter__(self) -> Iterator[str]:
        self.load_all()
        return iter(dict(self._loaded))

    def __len__(self) -> int:
        self.load_all()
        return len(self._loaded)

    def __setitem__(self, name: str, cls: type[Pass]) -> None:
        self._loaded[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]


PASSES = Registry()


def register(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make `cls` runnable by name from every pipeline and tool."""
    if not dataclasses.is_dataclass(cls) or "__dataclass_fields__" not in cls.__dict__:
        cls = dataclasses.dataclass(cls)
    if not cls.name or cls.name != cls.name.lower() or " " in cls.name:
        raise ValueError(f"pass {cls.__qualname__} needs a kebab-case `name`, got {cls.name!r}")
    module = PASSES.builtin.get(cls.name)
    if module is not None and cls.__module__ != f"tilec.passes.{module}":
        PASSES.load(cls.name)  # a plugin taking a built-in's name: load that one to refuse it
    existing = PASSES.loaded(cls.name)
    if existing is not None and existing is not cls:
        raise ValueError(f"pass name '{cls.name}' is already registered by {existing.__module__}")
    PASSES[cls.name] = cls
    return cls
