"""Frontend (check stage): a kernel's clauses (target, threads, grid, cluster, specialize,
variant, assume).

The methods of `sema.KernelChecker` that read the clauses after the kernel's signature: each
a located error where a clause is missing, repeated or out of range, and a usable default
after it so checking goes on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilec.diagnostics import note
from tilec.frontend import ast
from tilec.frontend.expr import COMPARISONS, STATIC_COMPARE
from tilec.frontend.limits import check_grid
from tilec.frontend.values import ErrorV, IntV, TypeV
from tilec.targets import MAX_CLUSTER, MAX_THREADS, MAX_THREADS_SM, TARGETS


@dataclass(frozen=True)
class Variant:
    """A `variant(...)` clause: its conditions' manifest formulas (all must hold) and the
    parameters its build sets."""

    when: tuple[str, ...]
    params: dict[str, str]


class Clauses:
    """Clause checks over a KernelChecker's state (`diags`, `node`, `c`, `scope`, `sizes`)."""

    def clauses(self) -> tuple[str | None, tuple[int, ...], list[IntV]]:
        seen: dict[str, ast.Clause] = {}
        for cl in self.node.clauses:
            if cl.name in seen and cl.name not in ("variant", "assume"):  # lists: in order
                self.diags.error(
                    f"duplicate {cl.name}(...) clause",
                    cl.span,
                    [note("the first one is here", seen[cl.name].span)],
                )
            seen.setdefault(cl.name, cl)
        target = self.target(seen.get("target"))
        threads = self.threads(seen.get("threads"))
        grid = self.grid(seen.get("grid"))
        return target, threads, grid

    def specialize(self, cl: ast.Clause | None) -> dict[str, int]:
        """`specialize(N <= 4096, M < 64)`: each a runtime size, `<=` or `<`, and a positive
        static bound; the build adds a variant compiled for the launches where all hold."""
        out: dict[str, int] = {}
        if cl is None:
            return out
        if not cl.args:
            self.diags.error("specialize(...) takes conditions such as N <= COLS", cl.span)
        for a in cl.args:
            if not (isinstance(a, ast.Binary) and a.op in ("<=", "<")):
                self.diags.error(
                    "a specialisation is a runtime size, '<=' or '<', and a static bound "
                    "(e.g. N <= COLS)",
                    a.span,
                )
                continue
            if not isinstance(a.lhs, ast.Name) or a.lhs.id not in self.sizes:
                sizes = ", ".join(sorted(self.sizes)) or "none"
                self.diags.error(
                    f"specialize(...) names a runtime size of the kernel's arguments (sizes: "
                    f"{sizes})",
                    a.lhs.span,
                )
                continue
            bound = self.c.expr(a.rhs, self.scope)
            if isinstance(bound, ErrorV):
                continue
            if not (isinstance(bound, IntV) and bound.static):
                self.diags.error("a specialisation's bound must be a static integer", a.rhs.span)
                continue
            at_most = bound.value - (a.op == "<")
            if at_most < 1:
                self.diags.error(
                    f"{a.lhs.id} {a.op} {bound.value} leaves no size of at least 1 to specialise "
                    "for",
                    a.span,
                )
                continue
            if a.lhs.id in out:
                self.diags.error(f"{a.lhs.id} is specialised twice", a.span)
                continue
            out[a.lhs.id] = at_most
        return out

    def assumptions(self, clauses: list[ast.Clause]) -> dict[str, int]:
        """The facts of the kernel's `assume(...)` clauses that hold for this build: each
        runtime size named, and the number it is a multiple of (several of one size: their
        lcm)."""
        facts: dict[str, int] = {}
        for cl in clauses:
            for name, k in self.assume(cl).items():
                facts[name] = math.lcm(facts.get(name, 1), k)
        return facts

    def assume(self, cl: ast.Clause) -> dict[str, int]:
        """`assume(ALIGN == 1, skn % 8 == 0, ...)`: static conditions, which decide at build
        time whether this build has the clause (as a variant's do), and facts `NAME % C == 0`
        about runtime sizes, which the build may take as true (its alignment tests) and every
        launch checks (the manifest's `requires`)."""
        facts: dict[str, int] = {}
        guards: list[bool] = []
        errors = self.diags.error_count
        for cond in cl.args:
            guard = self.assume_guard(cond)
            if guard is not None:
                guards.append(guard)
                continue
            fact = self.assumed_fact(cond)
            if fact is not None:
                facts[fact[0]] = math.lcm(facts.get(fact[0], 1), fact[1])
        if not cl.args:
            self.diags.error("assume(...) takes facts such as skn % 8 == 0", cl.span)
        elif not facts and self.diags.error_count == errors:
            self.diags.error("assume(...) states at least one fact of a runtime size", cl.span)
        return facts if all(guards) else {}

    def assume_guard(self, cond: ast.Node) -> bool | None:
        """The value of a static comparison (`ALIGN == 1`); None for a fact (`NAME % C == 0`,
        NAME no compile-time parameter) or what is neither (an error)."""
        lhs = cond.lhs if isinstance(cond, ast.Binary) else None
        if isinstance(lhs, ast.Binary) and lhs.op == "%" and isinstance(lhs.lhs, ast.Name):
            if lhs.lhs.id not in self.params:
                return None
        if not (isinstance(cond, ast.Binary) and cond.op in COMPARISONS):
            return None
        sides = [self.c.expr(side, self.scope) for side in (cond.lhs, cond.rhs)]
        if not all(isinstance(v, IntV) and v.static for v in sides):
            return None
        return STATIC_COMPARE[cond.op](sides[0].value, sides[1].value)

    def assumed_fact(self, cond: ast.Node) -> tuple[str, int] | None:
        """`NAME % C == 0`, NAME a runtime size and C a positive static integer: (NAME, C)."""
        form = "an assumption is a runtime size, '%', a static integer, '== 0' (e.g. skn % 8 == 0)"
        if not (
            isinstance(cond, ast.Binary)
            and cond.op == "=="
            and isinstance(cond.lhs, ast.Binary)
            and cond.lhs.op == "%"
        ):
            self.diags.error(form, cond.span)
            return None
        size, divisor = cond.lhs.lhs, cond.lhs.rhs
        if not isinstance(size, ast.Name) or size.id not in self.sizes:
            sizes = ", ".join(sorted(self.sizes)) or "none"
            self.diags.error(
                f"assume(...) states facts of the kernel's runtime sizes (sizes: {sizes})",
                size.span,
            )
            return None
        k, zero = self.c.expr(divisor, self.scope), self.c.expr(cond.rhs, self.scope)
        if not (isinstance(k, IntV) and k.static and k.value > 0):
            self.diags.error(
                "an assumption's divisor must be a positive static integer", divisor.span
            )
            return None
        if not (isinstance(zero, IntV) and zero.value == 0):
            self.diags.error(form, cond.rhs.span)
            return None
        return size.id, k.value

    def variants(self, clauses: list[ast.Clause]) -> tuple[Variant, ...]:
        """The kernel's `variant(...)` clauses in order (the runtime launches the first whose
        conditions all hold), less those whose parameters are already the build's."""
        found = (self.variant(cl) for cl in clauses)
        return tuple(v for v in found if v is not None)

    def variant(self, cl: ast.Clause) -> Variant | None:
        """`variant(K % 16 == 8, CM = 2)`: comparisons of runtime sizes (all must hold; static
        ones, such as `PP == 0`, decide at build time whether the build has the variant), then
        parameters with static values; the build adds the kernel built with those parameters,
        which the runtime launches where the comparisons hold. None where a static condition
        fails or the parameters are already these (the variant would be the kernel itself)."""
        split = next((i for i, a in enumerate(cl.args) if isinstance(a, ast.Keyword)), len(cl.args))
        conds, sets = cl.args[:split], cl.args[split:]
        checked = [self.variant_condition(cond) for cond in conds]
        if conds and all(isinstance(c, bool) for c in checked):
            self.diags.error(
                "a variant's condition must name a runtime size: this one is static", conds[0].span
            )
            checked.append(None)
        # A static condition (`PP == 0`) that fails: no variant of this build; one that holds
        # says nothing at launch.
        excluded = False in checked
        when = [c for c in checked if not isinstance(c, bool)]
        params: dict[str, str] = {}
        for kw in sets:
            assert isinstance(kw, ast.Keyword)
            if kw.name not in self.params:
                names = ", ".join(self.params) or "none"
                self.diags.error(
                    f"variant(...) sets the kernel's parameters (parameters: {names})", kw.span
                )
                continue
            if kw.name in params:
                self.diags.error(f"variant(...) sets {kw.name} twice", kw.span)
                continue
            v = self.c.expr(kw.value, self.scope)
            if isinstance(v, IntV) and v.static and isinstance(self.params[kw.name], int):
                params[kw.name] = str(v.value)
            elif isinstance(v, TypeV) and isinstance(self.params[kw.name], str):
                params[kw.name] = v.name
            elif not isinstance(v, ErrorV):
                kind = "a type" if isinstance(self.params[kw.name], str) else "a static integer"
                self.diags.error(f"{kw.name} is {kind}: the variant must set it to one", kw.span)
        if None in when or not params:
            if not sets:
                self.diags.error("variant(...) sets at least one parameter (e.g. CM = 2)", cl.span)
            return None
        if excluded or all(str(self.params[n]) == v for n, v in params.items()):
            return None
        return Variant(tuple(when), params)

    def variant_condition(self, cond: ast.Node) -> str | bool | None:
        """The manifest formula of a variant's condition (`lhs OP rhs`, comparing runtime sizes);
        its value where both sides are static (`PP == 0`: the variant is for some builds
        only); None after an error."""
        if not (isinstance(cond, ast.Binary) and cond.op in COMPARISONS):
            self.diags.error(
                "a variant's condition compares runtime sizes (e.g. K % 16 == 8)", cond.span
            )
            return None
        sides = [self.c.expr(side, self.scope) for side in (cond.lhs, cond.rhs)]
        if any(isinstance(v, ErrorV) for v in sides):
            return None
        if not all(isinstance(v, IntV) for v in sides):
            self.diags.error("a variant's condition compares integers", cond.span)
            return None
        if all(v.static for v in sides):
            return STATIC_COMPARE[cond.op](sides[0].value, sides[1].value)
        lhs, rhs = (v.text if not v.static else str(v.value) for v in sides)
        return f"({lhs}) {cond.op} ({rhs})"

    def target(self, cl: ast.Clause | None) -> str | None:
        if cl is None:
            self.diags.error(
                f"kernel '{self.node.name}' needs a target(...) clause ({' or '.join(TARGETS)})",
                self.node.span,
            )
            return None
        if len(cl.args) != 1 or not isinstance(cl.args[0], ast.Name):
            self.diags.error(f"target(...) takes one of {', '.join(TARGETS)}", cl.span)
            return None
        name = cl.args[0]
        if name.id not in TARGETS:
            self.diags.error(
                f"unknown target '{name.id}' (targets: {', '.join(TARGETS)})", name.span
            )
            return None
        return name.id

    def threads(self, cl: ast.Clause | None) -> tuple[int, ...]:
        if cl is None:
            self.diags.error(
                f"kernel '{self.node.name}' needs a threads(...) clause", self.node.span
            )
            return (1,)
        dims = []
        for a in cl.args:
            v = self.c.expr(a, self.scope)
            if isinstance(v, IntV) and v.static and v.value > 0:
                dims.append(v.value)
            elif not isinstance(v, ErrorV):
                self.diags.error("threads(...) takes positive static integers", a.span)
        if not 1 <= len(cl.args) <= 3:
            self.diags.error("threads(...) takes one to three sizes", cl.span)
        if dims and math.prod(dims) > MAX_THREADS:
            self.diags.error(f"{math.prod(dims)} threads per block, at most {MAX_THREADS}", cl.span)
        return tuple(dims) or (1,)

    def cluster(self, cl: ast.Clause | None) -> int:
        """`cluster(S)`: S consecutive blocks along x form a thread-block cluster (a power of
        two up to MAX_CLUSTER; 1, the default, is no cluster). Whether the target has clusters
        is the driver's check, which knows `--arch`."""
        if cl is None:
            return 1
        if len(cl.args) != 1:
            self.diags.error(
                "cluster(...) takes one size: the blocks of a cluster along x", cl.span
            )
            return 1
        v = self.c.expr(cl.args[0], self.scope)
        if isinstance(v, ErrorV):
            return 1
        size = v.value if isinstance(v, IntV) and v.static else None
        if size is None or size < 1 or size > MAX_CLUSTER or size & (size - 1):
            found = str(size) if size is not None else f"a runtime {v.describe()}"
            self.diags.error(
                f"cluster(...) takes a static power of two up to {MAX_CLUSTER}, found {found}",
                cl.args[0].span,
            )
            return 1
        return size

    def blocks_per_sm(self, cl: ast.Clause | None, threads: tuple[int, ...]) -> int:
        """`blocks_per_sm(B)`: ptxas keeps the registers a thread low enough for B blocks of this
        kernel on an SM (PTX `.minnctapersm`, CUDA's `__launch_bounds__` minimum; 0, the
        default, is no bound). B blocks' threads must fit an SM."""
        if cl is None:
            return 0
        if len(cl.args) != 1:
            self.diags.error("blocks_per_sm(...) takes one count: the blocks an SM holds", cl.span)
            return 0
        v = self.c.expr(cl.args[0], self.scope)
        if isinstance(v, ErrorV):
            return 0
        count = v.value if isinstance(v, IntV) and v.static else None
        per_block = math.prod(threads) if threads else 1
        if count is None or count < 0 or count * per_block > MAX_THREADS_SM:
            found = str(count) if count is not None else f"a runtime {v.describe()}"
            most = MAX_THREADS_SM // per_block
            self.diags.error(
                f"blocks_per_sm(...) takes a static count from 0 to {most} (blocks of "
                f"{per_block} threads an SM holds), found {found}",
                cl.args[0].span,
            )
            return 0
        return count

    def grid(self, cl: ast.Clause | None) -> list[IntV]:
        if cl is None:
            self.diags.error(f"kernel '{self.node.name}' needs a grid(...) clause", self.node.span)
            return []
        if not 1 <= len(cl.args) <= 3:
            self.diags.error("grid(...) takes one to three sizes", cl.span)
        dims = []
        for axis, a in enumerate(cl.args):
            v = self.c.expr(a, self.scope)
            if isinstance(v, IntV):
                check_grid(self, axis, v, a.span)
                dims.append(v)
            elif not isinstance(v, ErrorV):
                self.diags.error(f"a grid size must be an integer, found {v.describe()}", a.span)
        return dims
