"""tilec's layout algebra against C++ CuTe itself, compiled host-side from the cutlass headers.

Every case is written once, as a call of a `tilec.layout` function. The test turns the cases
into one C++ program over static (`Int<N>`) layouts, where CuTe checks its preconditions at
compile time, and compares what that program prints with tilec's answers:

    ACCEPTED   CuTe returns a layout        tilec returns the same one
    REJECTED   a CuTe static_assert fires   tilec raises LayoutError (each compiled alone)
    STRICTER   CuTe returns a layout that is not the operation's result (checked here by
               evaluating it); tilec raises rather than answer wrong (docs/layout-algebra.md)

Skipped when g++ or the headers (the `nvidia-cutlass` test dependency) are missing.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import tilec.layout as L

P = L.parse_layout

try:
    import cutlass_library

    INCLUDE = Path(cutlass_library.__file__).parent / "source" / "include"
except ImportError:
    INCLUDE = Path("/nonexistent")
CUDA = Path("/usr/local/cuda-13.0/include")
GXX = shutil.which("g++")

pytestmark = pytest.mark.skipif(
    GXX is None or not (INCLUDE / "cute" / "layout.hpp").exists() or not CUDA.exists(),
    reason="needs g++, the cutlass headers and the CUDA headers",
)

Case = tuple  # (function name, *arguments): arguments are Layouts, ints or int-tuples

ACCEPTED: list[Case] = [
    ("composition", P("(4,6,8,10):(2,3,5,7)"), P("6:12")),  # cuts mode 8:5 short at 3
    ("composition", P("(4,8):(8,1)"), P("2:4")),
    ("composition", P("(3,8):(8,1)"), P("2:2")),  # step 2 inside a mode of 3, ends there
    ("composition", P("(3,4):(1,5)"), P("2:2")),
    ("composition", P("(4,8):(1,5)"), P("4:-2")),  # negative strides walk the same modes
    ("composition", P("(4,8):(1,5)"), P("(2,4):(1,8)")),
    ("composition", P("(4,8):(1,5)"), P("(2,2):(2,4)")),
    ("composition", P("((2,4),8):((1,16),2)"), P("(4,4):(2,8)")),
    ("composition", P("(6,2):(2,1)"), P("(3,2):(2,1)")),
    ("composition", P("(2,3,4):(1,2,6)"), P("12:2")),
    ("composition", P("(8,8):(1,8)"), P("4:0")),
    ("composition", P("(4,8):(8,1)"), P("1:3")),
    ("complement", P("4:2"), 24),
    ("complement", P("(2,2):(1,4)")),
    ("complement", P("(2,4):(1,8)"), 64),
    ("complement", P("(2,2):(1,3)"), 18),
    ("complement", P("4:2"), (4, 6)),
    ("left_inverse", P("(4,2):(2,1)")),
    ("left_inverse", P("(2,4):(4,1)")),
    ("left_inverse", P("2:2")),
    ("left_inverse", P("(4,1,16):(1,0,4)")),
    ("left_inverse", P("((2,2),4):((1,8),2)")),
    ("left_inverse", P("(2,3):(3,1)")),
    ("right_inverse", P("(4,2):(2,1)")),
    ("right_inverse", P("(2,4):(1,4)")),
    ("shape_div", (4, 5, 6), 40),
    ("shape_div", (4, 5), (2, 5)),
    ("shape_div", 6, (2, 3)),
    ("shape_div", 2, 8),
    ("shape_div", (2, 8), 4),
    ("inner_product", (1, (2, 3)), (4, (5, 6))),
    ("inner_product", 3, -4),
    ("upcast", P("3:1"), 2),  # a partial last vector rounds up
    ("upcast", P("(8,4):(1,8)"), 4),
    ("upcast", P("(3,8):(1,-1)"), 2),
    ("upcast", P("(4,8):(2,0)"), 4),
    ("downcast", P("(4,8):(1,4)"), 2),
    ("cosize", P("(64,64):(-64,1)")),
    ("cosize", P("4:-1")),
    ("cosize", P("(4,8):(-1,5)")),
    ("cosize", P("(4,8):(1,4)")),
    ("logical_divide", P("(4,2,3):(2,1,8)"), P("4:2")),
    ("logical_product", P("(2,2):(4,1)"), P("6:1")),
    ("logical_divide", P("(8,8):(8,1)"), (P("2:1"), P("4:2"))),
    ("zipped_divide", P("(8,8):(8,1)"), (P("2:1"), P("4:2"))),
    ("tiled_divide", P("(8,8):(8,1)"), (P("2:1"), P("4:1"))),
    ("blocked_product", P("(2,2):(1,2)"), P("(2,3):(1,2)")),
    ("raked_product", P("(2,5):(5,1)"), P("(3,4):(1,3)")),
    ("coalesce", P("(2,(1,6)):(1,(6,2))"), (1, 1)),
    ("coalesce", P("((2,4),8):((1,2),8)")),
    ("max_common_vector", P("(4,8):(1,4)"), P("(4,8):(1,8)")),
    ("max_common_vector", P("(4,8):(8,1)"), P("(4,8):(1,4)")),
    ("max_common_layout", P("(4,8):(1,4)"), P("(4,8):(1,8)")),
    ("right_inverse", P("(2,4):(0,1)")),
    ("right_inverse", P("4:-1")),
    ("right_inverse", P("(4,8):(1,-4)")),
    ("max_common_vector", P("4:-1"), P("4:-1")),
    ("max_common_vector", P("(4,8):(-1,4)"), P("(4,8):(-1,4)")),
    ("max_common_layout", P("(4,8):(1,-4)"), P("(4,8):(1,-4)")),
    ("tile_to_shape", P("(2,4):(4,1)"), (8, 8), (1, 0)),  # nothing to coalesce here
    ("make_ordered_layout", (2, 3, 4), (1, 2, 0)),
]

# (case, the name of CuTe's static_assert, a pattern tilec's message must match)
REJECTED: list[tuple[Case, str, str]] = [
    (
        ("composition", P("(8,32):(32,1)"), P("(3,4):(1,3)")),
        "Shape Divisibility Condition",
        r"shape divisibility condition",
    ),
    (
        ("composition", P("(2,8):(1,5)"), P("2:3")),
        "Stride Divisibility Condition",
        r"stride divisibility condition",
    ),
    (
        ("composition", P("(2,8):(1,5)"), P("1:3")),
        "Stride Divisibility Condition",
        r"stride divisibility condition",
    ),
    (
        ("left_inverse", P("(4,1,16):(3,0,8)")),
        "Left inverse divisibility condition",
        r"stride 8 is not a multiple of the next smaller stride 3 "
        r"\(left inverse divisibility condition\)",
    ),
    (("complement", P("(2,2):(1,1)")), "Non-injective", r"starts inside the span 2"),
    (("complement", P("(3,2):(2,3)")), "Non-injective", r"mode 2:3 starts inside the span 6"),
    (("upcast", P("4:3"), 2), "Divisibility condition", r"divisibility condition"),
    (("downcast", P("4:2"), 2), "Downcast requires adjacent", r"no mode has stride 1"),
    (("downcast", P("(4,8):(-1,4)"), 2), "Downcast requires adjacent", r"no mode has stride 1"),
    (("shape_div", 3, 2), "Divisibility Condition", r"divisibility condition"),
    (("shape_div", (3, 4), 2), "Divisibility Condition", r"divisibility condition"),
    (
        ("tile_to_shape", P("(8,8):(8,1)"), (12, 64)),
        "tile_to_shape: block shape does not divide the target shape",
        r"block size 8 does not divide target size 12",
    ),
    (
        ("tile_to_shape", P("(2,2,2)"), (4, 4)),
        "Rank of layout must be <= rank of target shape",
        r"block has rank 3",
    ),
    (
        ("logical_divide", P("(4,8):(1,4)"), (P("2:1"), P("2:1"), P("2:1"))),
        "logical_divide: Too many modes in tiler",
        r"3 modes but the layout has rank 2",
    ),
]

# Cases where tilec returns CuTe's layout with each mode coalesced, as documented
# (docs/layout-algebra.md, tile_to_shape): the same function, mode by mode the same sizes.
COALESCED: list[Case] = [
    ("tile_to_shape", P("(8,8):(8,1)"), (32, 64)),
]

# Cases CuTe answers with something that is not the operation: (case, pattern for tilec).
# A composition's answer is evaluated against lhs(rhs(i)); a complement's has shape entries
# below 1, which is no layout at all.
STRICTER: list[tuple[Case, str]] = [
    (("composition", P("(3,4):(1,5)"), P("4:2")), r"CuTe's result here is not the composition"),
    (("composition", P("(4,8):(1,5)"), P("2:-6")), r"stride divisibility condition"),
    (("composition", P("(5,8):(1,7)"), P("(2,6):(1,2)")), r"not the composition"),
    (("complement", P("4:-1"), 8), r"negative stride -1"),
    (("complement", P("(2,4):(-1,2)"), 16), r"negative stride -1"),
]


def cpp(x: object) -> str:
    """A static C++ CuTe value for a Layout or an int-tuple."""
    if isinstance(x, L.Layout):
        return f"make_layout({cpp(x.shape)}, {cpp(x.stride)})"
    if isinstance(x, tuple):
        return "make_tuple(" + ", ".join(cpp(e) for e in x) + ")"
    return f"Int<{x}>{{}}"


def cpp_call(case: Case) -> str:
    op, *args = case
    if op in ("upcast", "downcast"):
        return f"{op}<{args[1]}>({cpp(args[0])})"
    return f"{op}(" + ", ".join(cpp(a) for a in args) + ")"


HEADERS = "#include <cute/layout.hpp>\n#include <cstdio>\n"


def program(cases: list[Case]) -> str:
    body = "".join(f'  print({cpp_call(c)}); printf("\\n");\n' for c in cases)
    return f'#include "cute_pre.hpp"\nusing namespace cute;\nint main() {{\n{body}  return 0;\n}}\n'


def compile_cmd(src: Path, *extra: str, language: str = "") -> list[str]:
    flags = [f"-I{INCLUDE}", f"-I{CUDA}"]
    if (CUDA / "cccl").exists():
        flags.append(f"-I{CUDA / 'cccl'}")
    kind = ["-x", language] if language else []
    return [GXX, "-std=c++17", "-w", *flags, *kind, str(src), *extra]


def static_asserts(stderr: str) -> str:
    """The compiler's static-assertion lines (the rest is template instantiation noise)."""
    return "\n".join(line for line in stderr.splitlines() if "static assert" in line)


def run_cute(work: Path, runs: list[Case]) -> dict[str, list]:
    """Compile and run the program over `runs`; compile each REJECTED case alone. CuTe's
    headers are precompiled first (cute_pre.hpp.gch): parsing them was most of each compile."""
    (work / "cute_pre.hpp").write_text(HEADERS)
    header = compile_cmd(
        work / "cute_pre.hpp", "-o", str(work / "cute_pre.hpp.gch"), language="c++-header"
    )
    pre = subprocess.run(header, capture_output=True, text=True)
    assert pre.returncode == 0, pre.stderr[-4000:]
    # The runs as two programs compiled side by side (one was the long pole), then the rejects.
    halves = [runs[: len(runs) // 2], runs[len(runs) // 2 :]]
    jobs: list[list[str]] = []
    for h, cases in enumerate(halves):
        (work / f"main{h}.cpp").write_text(program(cases))
        jobs.append(compile_cmd(work / f"main{h}.cpp", "-o", str(work / f"main{h}")))
    for i, (case, _, _) in enumerate(REJECTED):
        src = work / f"reject{i}.cpp"
        src.write_text(program([case]))
        jobs.append(compile_cmd(src, "-fsyntax-only"))
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda cmd: subprocess.run(cmd, capture_output=True, text=True), jobs))
    printed: list[str] = []
    for h, d in enumerate(done[: len(halves)]):
        assert d.returncode == 0, d.stderr[-4000:]
        run = subprocess.run([str(work / f"main{h}")], capture_output=True, text=True, check=True)
        printed += run.stdout.splitlines()
    return {
        "printed": printed,
        "rejected": [[d.returncode, static_asserts(d.stderr)] for d in done[len(halves) :]],
    }


@pytest.fixture(scope="module")
def cute_out(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """CuTe's printed answers for ACCEPTED, COALESCED and STRICTER, and the compiler's words on
    REJECTED; cached by the programs' text and the headers' path (compiling takes ~12 s)."""
    runs = [*ACCEPTED, *COALESCED, *(c for c, _ in STRICTER)]
    # the key covers what is compiled, and how run_cute reports it (bump the "3" with it)
    sources = ["3", HEADERS, program(runs), *(program([c]) for c, _, _ in REJECTED), str(INCLUDE)]
    key = "tilec/cute-oracle/" + hashlib.sha256("\0".join(sources).encode()).hexdigest()[:16]
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    out = cache.get(key, None) if cache is not None else None
    if out is None:
        out = run_cute(tmp_path_factory.mktemp("cute"), runs)
        if cache is not None:
            cache.set(key, out)
    return {
        "printed": dict(zip(runs, out["printed"], strict=True)),
        "rejected": [tuple(r) for r in out["rejected"]],
    }


def cute_text(printed: str) -> str:
    """CuTe prints a static 8 as `_8`; tilec prints `8`."""
    return printed.replace("_", "")


def tilec(case: Case) -> object:
    op, *args = case
    return getattr(L, op)(*args)


def spelled(x: object) -> str:
    return L.tuple_str(x) if not isinstance(x, L.Layout) else str(x)


def case_id(case: Case) -> str:
    op, *args = case
    return f"{op}(" + ", ".join(spelled(a) for a in args) + ")"


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda c: case_id(c))
def test_accepted_agrees(case: Case, cute_out: dict) -> None:
    assert spelled(tilec(case)) == cute_text(cute_out["printed"][case])


@pytest.mark.parametrize("i", range(len(REJECTED)), ids=lambda i: case_id(REJECTED[i][0]))
def test_rejected_by_both(i: int, cute_out: dict) -> None:
    case, assertion, pattern = REJECTED[i]
    rc, stderr = cute_out["rejected"][i]
    assert rc != 0 and assertion in stderr, stderr
    with pytest.raises(L.LayoutError, match=pattern):
        tilec(case)


@pytest.mark.parametrize("case", COALESCED, ids=lambda c: case_id(c))
def test_coalesced_is_the_same_function(case: Case, cute_out: dict) -> None:
    mine, theirs = tilec(case), P(cute_text(cute_out["printed"][case]))
    assert mine != theirs  # else it belongs in ACCEPTED
    assert [L.size(m) for m in mine] == [L.size(m) for m in theirs]
    assert [mine(i) for i in range(L.size(mine))] == [theirs(i) for i in range(L.size(theirs))]


def odd_extension(lhs: L.Layout) -> Callable[[int], int]:
    """lhs at negative indices as CuTe's composition walks them: lhs(-i) = -lhs(i)."""
    return lambda i: lhs(i) if i >= 0 else -lhs(-i)


@pytest.mark.parametrize("i", range(len(STRICTER)), ids=lambda i: case_id(STRICTER[i][0]))
def test_stricter_where_cute_is_wrong(i: int, cute_out: dict) -> None:
    case, pattern = STRICTER[i]
    op, lhs, rhs = case
    printed = cute_text(cute_out["printed"][case])
    if op == "composition":
        theirs, f = P(printed), odd_extension(lhs)
        assert L.size(theirs) == L.size(rhs)
        assert any(theirs(k) != f(rhs(k)) for k in range(L.size(rhs))), f"CuTe is right: {theirs}"
    else:
        assert min(L.flatten(L.parse_int_tuple(printed.split(":")[0]))) < 1, printed
    with pytest.raises(L.LayoutError, match=pattern):
        tilec(case)


def test_accepted_compositions_are_compositions() -> None:
    """Where CuTe and tilec agree, the answer is also lhs o rhs index by index."""
    for op, *args in ACCEPTED:
        if op != "composition":
            continue
        lhs, rhs = args
        mine, f = L.composition(lhs, rhs), odd_extension(lhs)
        assert [mine(k) for k in range(L.size(rhs))] == [f(rhs(k)) for k in range(L.size(rhs))]
