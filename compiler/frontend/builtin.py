"""Frontend (check stage): how builtins are declared, and helpers their checks share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilec.frontend import ast
from tilec.frontend.atoms import ATOMS, Atom
from tilec.frontend.expr import ExprChecker
from tilec.frontend.types import SCALAR_TYPES
from tilec.frontend.values import AtomV, ErrorV, IntV, TensorV, TupleV, TypeV, V

Handler = Callable[[ExprChecker, ast.Call, list[V], dict[str, V]], V]


@dataclass(frozen=True)
class Builtin:
    fn: Handler
    min_args: int
    max_args: int
    kwargs: tuple[str, ...] = ()
    targs: tuple[int, int] = (0, 0)  # how many template arguments, least and most
    # Template arguments are atom names (copy, tiled_mma), or else values (types, integers)
    # that the call checks like its other arguments.
    atom_targs: bool = False


def registrar(table: dict[str, Builtin]) -> Callable[..., Callable[[Handler], Handler]]:
    """A decorator factory `builtin(name, lo, hi, kwargs=(), targs=(0, 0), atom_targs=False)`
    that enters the decorated check into `table`."""

    def builtin(
        name: str,
        lo: int,
        hi: int,
        kwargs: tuple[str, ...] = (),
        targs: tuple[int, int] = (0, 0),
        atom_targs: bool = False,
    ) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            table[name] = Builtin(fn, lo, hi, kwargs, targs, atom_targs)
            return fn

        return register

    return builtin


# Template arguments ----------------------------------------------------------------------------


def targ_atom(c: ExprChecker, node: ast.Node, kind: str) -> Atom | None:
    text = node.text if isinstance(node, ast.AtomName) else getattr(node, "id", None)
    if text is not None:  # sm80.mma_16x8x16.f32.T.T.f32 with T: type = bf16
        text = ".".join(c.type_params.get(part, part) for part in text.split("."))
    atom = ATOMS.get(text or "")
    if atom is None:
        names = ", ".join(a.name for a in ATOMS.values() if a.kind == kind)
        c.error(f"unknown {kind} atom '{text or '?'}' (atoms: {names})", node.span)
        return None
    if atom.kind != kind:
        c.error(f"'{atom.name}' is a {atom.kind} atom, this needs a {kind} atom", node.span)
        return None
    if c.target is not None and c.target not in atom.targets:
        c.error(
            f"atom '{atom.name}' needs target {' or '.join(sorted(atom.targets))}, kernel "
            f"targets {c.target}",
            node.span,
        )
        return None
    c.values[id(node)] = AtomV(atom.name)
    return atom


def targ_type(c: ExprChecker, node: ast.Node) -> str | None:
    v = c.values.get(id(node))
    if isinstance(v, TypeV):
        return v.name
    if not isinstance(v, ErrorV):
        c.error(f"expected an element type ({', '.join(SCALAR_TYPES)})", node.span)
    return None


# Arguments -------------------------------------------------------------------------------------


def ints_arg(c: ExprChecker, node: ast.Call, args: list[V]) -> list[IntV] | None:
    """`args` if they are all integers, else None after an error at the first that is not."""
    for a, n in zip(args, node.args, strict=True):
        if not isinstance(a, IntV):
            c.error(f"{node.func} takes integers, not a {a.describe()}", n.span)
            return None
    return args


def tensor_arg(
    c: ExprChecker, v: V, node: ast.Node, spaces: tuple[str, ...] = ()
) -> TensorV | None:
    """`v` if it is a tensor in one of `spaces` (any if empty), else None after an error."""
    if not isinstance(v, TensorV):
        c.error(f"expected a tensor, found {v.describe()}", node.span)
        return None
    if spaces and v.space not in spaces:
        c.error(f"expected a {' or '.join(spaces)} tensor, found a {v.space} one", node.span)
        return None
    return v


def items(v: V) -> list[V]:
    """The top-level items of a tuple; any other value is a tuple of one."""
    return v.items if isinstance(v, TupleV) else [v]
