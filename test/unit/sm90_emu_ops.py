"""Test helper (sm90_emu): what each op of a `gpu`-stage SM90 kernel does to one warp group's
128 lanes (numpy vectors; an int where the lanes agree), by op name: arith, math, llvm, gpu and
the nvvm ops tilec emits. An op missing here is a NotImplementedError naming it."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from mlir import ir
from sm90_emu_model import (
    WARPGROUP,
    Groups,
    MBarrier,
    Mma,
    Pending,
    bf16_round,
    copy_box,
    decode,
    elem_size,
    encode,
    from_bits16,
    run_mma,
    store_box,
    to_bits16,
    uniform,
    wrap,
)

if TYPE_CHECKING:
    from sm90_emu import Group

# Ops ---------------------------------------------------------------------------------------

Op = Callable[["Group", ir.Operation, np.ndarray], object]
OPS: dict[str, Op] = {}


def op(*names: str) -> Callable[[Op], Op]:
    def register(fn: Op) -> Op:
        for n in names:
            OPS[n] = fn
        return fn

    return register


def rtype(o: ir.Operation, k: int = 0) -> str:
    return str(o.results[k].type)


def attr_int(o: ir.Operation, name: str) -> int:
    return ir.IntegerAttr(o.attributes[name]).value


def unsigned(x: object, t: str) -> np.ndarray:
    width = {"i1": 1, "i8": 8, "i16": 16, "i32": 32}.get(t, 64)
    x = np.asarray(x, dtype=np.int64)
    return x.astype(np.uint64) & np.uint64((1 << width) - 1 if width < 64 else (1 << 64) - 1)


def floats(t: str, x: object) -> np.ndarray:
    """`x` as type `t` holds it: f32, f16 rounded, bf16 rounded (kept as float32)."""
    x = np.asarray(x, dtype=np.float32)
    if t == "f16":
        return x.astype(np.float16).astype(np.float32)
    if t == "bf16":
        return bf16_round(x)
    return x


@op("arith.constant", "llvm.mlir.constant")
def constant(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    a = o.attributes["value"]
    t = rtype(o)
    if isinstance(a, ir.BoolAttr):
        return np.int64(int(a.value))
    if isinstance(a, ir.IntegerAttr):
        return np.int64(a.value)
    if isinstance(a, ir.FloatAttr):
        return floats(t, a.value)
    if isinstance(a, ir.DenseElementsAttr) and a.is_splat:
        n, e = re.fullmatch(r"vector<(\d+)x(\w+)>", t).groups()
        v = a.get_splat_value()
        x = v.value
        return np.full(int(n), x, dtype=np.float32 if e.startswith(("f", "bf")) else np.int64)
    raise NotImplementedError(f"constant {a}")


INT_BINARY = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum,
}  # fmt: skip


@op(*INT_BINARY)
def int_binary(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    a, b = (np.asarray(g.value(v), dtype=np.int64) for v in o.operands)
    return wrap(INT_BINARY[o.name](a, b), rtype(o))


@op("arith.shli", "arith.shrui", "arith.shrsi", "arith.divui", "arith.remui", "arith.maxui",
    "arith.minui", "arith.ceildivui")  # fmt: skip
def int_unsigned(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    t = rtype(o)
    a, b = (unsigned(g.value(v), t) for v in o.operands)
    name = o.name.split(".")[1]
    safe = np.where(b == 0, np.uint64(1), b)
    out = {
        "shli": lambda: a << b, "shrui": lambda: a >> b,
        "shrsi": lambda: np.asarray(wrap(a.astype(np.int64), t)) >> b.astype(np.int64),
        "divui": lambda: a // safe, "remui": lambda: a % safe, "maxui": lambda: np.maximum(a, b),
        "minui": lambda: np.minimum(a, b), "ceildivui": lambda: (a + safe - np.uint64(1)) // safe,
    }[name]()  # fmt: skip
    return wrap(np.asarray(out).astype(np.int64), t)


@op("arith.floordivsi", "arith.ceildivsi", "arith.divsi", "arith.remsi")
def int_signed_div(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    a, b = (np.asarray(g.value(v), dtype=np.int64) for v in o.operands)
    safe = np.where(b == 0, 1, b)
    if o.name == "arith.floordivsi":
        out = np.floor_divide(a, safe)
    elif o.name == "arith.ceildivsi":
        out = -np.floor_divide(-a, safe)
    elif o.name == "arith.divsi":
        out = np.trunc(a / safe).astype(np.int64)
    else:
        out = a - np.trunc(a / safe).astype(np.int64) * safe
    return wrap(out, rtype(o))


CMPI = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater,
        5: np.greater_equal}  # fmt: skip


@op("arith.cmpi")
def cmpi(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    p = attr_int(o, "predicate")
    t = str(o.operands[0].type)
    a, b = (g.value(v) for v in o.operands)
    if p >= 6:  # ult ule ugt uge
        a, b, p = unsigned(a, t), unsigned(b, t), p - 4
    return CMPI[p](np.asarray(a), np.asarray(b)).astype(np.int64)


@op("arith.cmpf")
def cmpf(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    p = attr_int(o, "predicate")
    a, b = (np.asarray(g.value(v), dtype=np.float32) for v in o.operands)
    unordered = np.isnan(a) | np.isnan(b)
    base = {1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less, 5: np.less_equal,
            6: np.not_equal, 8: np.equal, 9: np.greater, 10: np.greater_equal, 11: np.less,
            12: np.less_equal, 13: np.not_equal}  # fmt: skip
    if p in (0, 15):
        return np.int64(p == 15)
    if p in (7, 14):
        return (~unordered if p == 7 else unordered).astype(np.int64)
    r = base[p](a, b)
    return (r & ~unordered if p <= 6 else r | unordered).astype(np.int64)


@op("arith.select", "llvm.select")
def select(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    c, a, b = (g.value(v) for v in o.operands)
    return np.where(np.asarray(c, dtype=bool), a, b)


@op("arith.index_cast", "arith.index_castui", "arith.extui", "arith.extsi", "arith.trunci",
    "llvm.ptrtoint", "llvm.inttoptr", "llvm.addrspacecast", "llvm.zext", "llvm.sext",
    "llvm.trunc")  # fmt: skip
def int_cast(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    src = str(o.operands[0].type)
    x = g.value(o.operands[0])
    if o.name in ("arith.extui", "arith.index_castui", "llvm.zext"):
        x = unsigned(x, src).astype(np.int64)
    return wrap(np.asarray(x, dtype=np.int64), rtype(o))


FLOAT_BINARY = {
    "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
    "arith.divf": np.divide, "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin,
}  # fmt: skip


@op(*FLOAT_BINARY)
def float_binary(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    a, b = (np.asarray(g.value(v), dtype=np.float32) for v in o.operands)
    with np.errstate(all="ignore"):
        return floats(rtype(o), FLOAT_BINARY[o.name](a, b))


FLOAT_UNARY = {
    "math.exp2": np.exp2, "math.exp": np.exp, "math.log": np.log, "math.log2": np.log2,
    "math.sqrt": np.sqrt, "math.rsqrt": lambda x: 1 / np.sqrt(x), "arith.negf": np.negative,
    "math.absf": np.abs, "arith.truncf": lambda x: x, "arith.extf": lambda x: x,
}  # fmt: skip


@op(*FLOAT_UNARY)
def float_unary(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    x = np.asarray(g.value(o.operands[0]), dtype=np.float32)
    with np.errstate(all="ignore"):
        return floats(rtype(o), FLOAT_UNARY[o.name](x))


@op("math.fma")
def fma(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    a, b, c = (np.asarray(g.value(v), dtype=np.float64) for v in o.operands)
    return floats(rtype(o), a * b + c)


@op("arith.sitofp", "arith.uitofp")
def to_float(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    return floats(rtype(o), np.asarray(g.value(o.operands[0]), dtype=np.float64))


@op("arith.fptosi")
def to_int(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    return wrap(np.trunc(np.asarray(g.value(o.operands[0]))).astype(np.int64), rtype(o))


# llvm values


@op("llvm.mlir.undef", "llvm.mlir.poison", "llvm.mlir.zero")
def undef(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    t = rtype(o)
    if t.startswith("!llvm.struct"):
        return [None] * t.count(",") if "," in t else [None]
    if t.startswith("vector<"):
        n, e = re.fullmatch(r"vector<(\d+)x(\w+)>", t).groups()
        return np.zeros((WARPGROUP, int(n)), dtype=np.float32 if "f" in e else np.int64)
    return np.int64(0)


def struct_size(t: str) -> int:
    return t.count(",") + 1


@op("llvm.insertvalue")
def insertvalue(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    (pos,) = ir.DenseI64ArrayAttr(o.attributes["position"])
    s = list(g.get(o.operands[0]) or [None] * struct_size(rtype(o)))
    if len(s) < struct_size(rtype(o)):
        s += [None] * (struct_size(rtype(o)) - len(s))
    s[pos] = g.get(o.operands[1])
    return s


@op("llvm.extractvalue")
def extractvalue(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    (pos,) = ir.DenseI64ArrayAttr(o.attributes["position"])
    return g.get(o.operands[0])[pos]


def lanes(x: object, n: int) -> np.ndarray:
    x = np.asarray(x)
    return np.broadcast_to(x, (WARPGROUP, n)).copy() if x.ndim < 2 else x.copy()


@op("llvm.insertelement", "vector.insertelement")
def insertelement(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    vec, value, index = (g.value(v) for v in o.operands)
    n = int(re.fullmatch(r"vector<(\d+)x\w+>", rtype(o)).group(1))
    out = lanes(vec, n).astype(np.float32 if "f" in rtype(o).split("x")[1] else np.int64)
    out[:, uniform(index, mask)] = value
    return out


@op("llvm.extractelement")
def extractelement(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    vec, index = (g.value(v) for v in o.operands)
    return np.asarray(vec)[:, uniform(index, mask)]


@op("llvm.bitcast")
def bitcast(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    src, dst = str(o.operands[0].type), rtype(o)
    x = g.value(o.operands[0])
    words, halves = _words_halves(src, dst)
    if words:  # 32-bit words as twice as many 16-bit floats
        x = np.broadcast_to(np.asarray(x), (WARPGROUP,))[:, None] if src == "i32" else x
        w = unsigned(lanes(x, words), "i32").astype(np.int64)
        pairs = np.stack([w & 0xFFFF, w >> 16], axis=-1).reshape(w.shape[0], -1)
        return from_bits16(pairs, halves)
    words, halves = _words_halves(dst, src)
    if words:  # and back (a lane's one word where `dst` is i32)
        v = to_bits16(lanes(x, 2 * words), halves)
        out = wrap(v[:, 0::2] | (v[:, 1::2] << 16), "i32")
        return out[:, 0] if dst == "i32" else out
    fro, to = (re.fullmatch(r"vector<(\d+)x(f32|i32)>", t) for t in (src, dst))
    if fro and to and fro.group(1) == to.group(1) and fro.group(2) != to.group(2):
        n = int(fro.group(1))  # the same 32-bit words, as floats or as integers
        if fro.group(2) == "f32":
            return wrap(lanes(x, n).astype(np.float32).view(np.int32).astype(np.int64), "i32")
        return unsigned(lanes(x, n), "i32").astype(np.uint32).view(np.float32)
    if src == dst or (src.startswith("!llvm.ptr") and dst.startswith("!llvm.ptr")):
        return x
    raise NotImplementedError(f"bitcast {src} to {dst}")


def _words_halves(words: str, halves: str) -> tuple[int, str]:
    """(N, the float type) where `words` is N 32-bit words (i32 or vector<Nxi32>) and `halves`
    vector<2N x f16 or bf16>; (0, "") otherwise."""
    w = re.fullmatch(r"vector<(\d+)xi32>", "vector<1xi32>" if words == "i32" else words)
    h = re.fullmatch(r"vector<(\d+)x(f16|bf16)>", halves)
    if w and h and 2 * int(w.group(1)) == int(h.group(1)):
        return int(w.group(1)), h.group(2)
    return 0, ""


@op("llvm.getelementptr")
def gep(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    elem = elem_size(str(ir.TypeAttr(o.attributes["elem_type"]).value))
    raw = list(ir.DenseI32ArrayAttr(o.attributes["rawConstantIndices"]))
    dynamic = iter(list(o.operands)[1:])
    base = np.asarray(g.value(o.operands[0]), dtype=np.int64)
    (index,) = raw
    i = g.value(next(dynamic)) if index == -(2**31) else index
    return base + np.asarray(i, dtype=np.int64) * elem


@op("llvm.mlir.addressof")
def addressof(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    name = ir.FlatSymbolRefAttr(o.attributes["global_name"]).value
    return np.int64(g.block.globals[name][0])


@op("llvm.load")
def load(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    t = rtype(o)
    ptr = np.broadcast_to(np.asarray(g.value(o.operands[0]), dtype=np.int64), mask.shape)
    size = elem_size(t)
    out = [decode(g.block.memory.read(int(p), size), t) if m else decode(bytes(size), t)
           for p, m in zip(ptr, mask, strict=True)]  # fmt: skip
    return np.array(out)


@op("llvm.store")
def store(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    t = str(o.operands[0].type)
    value = np.asarray(g.value(o.operands[0]))
    ptr = np.broadcast_to(np.asarray(g.value(o.operands[1]), dtype=np.int64), mask.shape)
    vector = t.startswith("vector<")
    for lane in np.flatnonzero(mask):
        v = value if value.ndim == (1 if vector else 0) else value[lane]
        g.block.memory.write(int(ptr[lane]), encode(v, t))


@op("llvm.inline_asm")
def inline_asm(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    text = ir.StringAttr(o.attributes["asm_string"]).value
    constraints = ir.StringAttr(o.attributes["constraints"]).value
    if text == "" and constraints in ("=f,0", "=r,0"):  # a fence: the value as it is
        return g.get(o.operands[0])
    if "wgmma.mma_async" in text:
        return issue_rs(g, o, text)
    if GLOBAL_ASM.fullmatch(text):
        return global_asm(g, o, text, mask)
    for handler in ASM:
        out = handler(g, o, text)
        if out is not None:
            return out
    raise NotImplementedError(f"inline asm {text!r}")


# More inline-asm forms, each a handler returning the result or None where `text` is not its
# form (sm80_emu_ops adds tilec's register moves).
ASM: list[Callable[[Group, ir.Operation, str], object | None]] = []


# a predicated global access of one or four 32-bit words (tilec's vectors and skewed rows)
GLOBAL_ASM = re.compile(r"@\$(\d+) (ld|st)\.global\.(v4\.)?b32 .*;")


def global_asm(g: Group, o: ir.Operation, text: str, mask: np.ndarray) -> object:
    """`@p ld.global[.v4].b32` (words where p holds, 0 elsewhere: the kernels select their own
    fill) or `@p st.global[.v4].b32` (written where p holds), per lane of `mask`."""
    m = GLOBAL_ASM.fullmatch(text)
    n = 4 if m.group(3) else 1
    values = [g.value(v) for v in o.operands]
    outputs = ir.StringAttr(o.attributes["constraints"]).value.count("=")  # $0.. are results
    pred = np.broadcast_to(np.asarray(values[int(m.group(1)) - outputs], bool), mask.shape)
    ptr = np.broadcast_to(np.asarray(values[0], dtype=np.int64), mask.shape)
    live = mask & pred
    if m.group(2) == "st":
        words = [np.broadcast_to(unsigned(v, "i32"), mask.shape) for v in values[1 : 1 + n]]
        for lane in np.flatnonzero(live):
            data = b"".join(int(w[lane]).to_bytes(4, "little") for w in words)
            g.block.memory.write(int(ptr[lane]), data)
        return None
    out = np.zeros((n, mask.size), dtype=np.int64)
    for lane in np.flatnonzero(live):
        data = g.block.memory.read(int(ptr[lane]), 4 * n)
        out[:, lane] = np.frombuffer(data, dtype="<u4")
    words = [wrap(w, "i32") for w in out]
    return words if n == 4 else words[0]


@op("nvvm.prmt")
def prmt(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    """PTX prmt.b32, default mode: byte i of the result is byte (selector's nibble i & 7) of
    hi:lo (PTX ISA; no sign replication: tilec's selectors have bit 3 clear)."""
    view = o.opview
    lo, hi, sel = (unsigned(g.value(v), "i32") for v in (view.lo, view.hi, view.selector))
    pool = (hi << np.uint64(32)) | lo
    out = np.zeros(np.broadcast(pool, sel).shape, dtype=np.uint64)
    for i in range(4):
        pick = (sel >> np.uint64(4 * i)) & np.uint64(7)
        out |= ((pool >> (pick * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * i)
    return wrap(out.astype(np.int64), "i32")


@op("llvm.intr.fshr")
def fshr(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    """The low 32 bits of (a:b) >> (c % 32) (LLVM's funnel shift right, a high)."""
    a, b, c = (unsigned(g.value(v), "i32") for v in o.operands)
    both = (a << np.uint64(32)) | b
    return wrap(((both >> (c % np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.int64), "i32")


def issue_rs(g: Group, o: ir.Operation, text: str) -> object:
    m = re.search(r"\.m(\d+)n(\d+)k(\d+)\.f32\.(\w+)\.\w+ .*, (\d);", text)
    mm, n, k = (int(m.group(i)) for i in (1, 2, 3))
    elem, tnsp_b = m.group(4), m.group(5)
    regs = n // 2
    ops = list(o.operands)
    # scale-d: the predicate `p` is set from a literal, 0 for D = A·B (the input ignored)
    add = re.search(r"setp\.ne\.b32 p, (\d), 0;", text).group(1) == "1"
    acc = [g.get(v) if add else np.float32(0) for v in ops[:regs]]
    a = [np.asarray(g.value(v)) for v in ops[regs : regs + 4]]
    desc = uniform(g.value(ops[regs + 4]), np.ones(WARPGROUP, dtype=bool))
    mma = Mma("rs", mm, n, k, elem, acc, a, desc, (False, tnsp_b == "1"))
    g.mmas.add(functools.partial(run_mma, g.block.memory, mma))
    return [Pending(mma, i) for i in range(regs)]


@op("nvvm.wgmma.mma_async")
def issue_ss(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    shape = str(o.attributes["shape"])
    mm, n, k = (int(x) for x in re.findall(r"= (\d+)", shape))
    elem = re.search(r"<(\w+)>", str(o.attributes["typeA"])).group(1)
    acc = list(g.get(o.operands[0]))
    if "zero" in str(o.attributes["scaleD"]):  # D = A·B: the input accumulator ignored
        acc = [np.float32(0)] * (n // 2)
    da, db = (uniform(g.value(v), mask) for v in list(o.operands)[1:3])
    tnsp = ("col" in str(o.attributes["layoutA"]), "row" in str(o.attributes["layoutB"]))
    mma = Mma("ss", mm, n, k, elem, acc, da, db, tnsp)
    g.mmas.add(functools.partial(run_mma, g.block.memory, mma))
    return [Pending(mma, i) for i in range(n // 2)]


@op("nvvm.wgmma.fence.aligned", "nvvm.setmaxregister", "nvvm.fence.mbarrier.init",
    "nvvm.fence.proxy", "nvvm.fence.proxy.acquire", "nvvm.fence.proxy.release")  # fmt: skip
def nothing(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    return None


@op("nvvm.cp.async.shared.global")
def cp_async(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    """cp.async of `size` bytes a lane (the source's first `cpSize` of them, the rest zeros),
    done when a wait retires its group: a read of the shared bytes before that sees the old."""
    operands = [np.broadcast_to(np.asarray(g.value(v), np.int64), mask.shape) for v in o.operands]
    size = attr_int(o, "size")
    dst, src = operands[0], operands[1]
    given = operands[2] if len(operands) > 2 else np.full(mask.shape, size)
    memory = g.block.memory
    copies = [(int(dst[k]), int(src[k]), int(given[k])) for k in np.flatnonzero(mask)]

    def land() -> None:
        for d, s, n in copies:
            memory.write(d, (memory.read(s, n) if n else b"") + bytes(size - n))

    g.copies.add(land)


@op("nvvm.cp.async.commit.group")
def cp_async_commit(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    g.copies.commit()


@op("nvvm.cp.async.wait.group")
def cp_async_wait(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    g.copies.retire(attr_int(o, "n"))


@op("nvvm.wgmma.commit.group.sync.aligned", "nvvm.cp.async.bulk.commit.group")
def commit(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    queue(g, o).commit()


@op("nvvm.wgmma.wait.group.sync.aligned", "nvvm.cp.async.bulk.wait_group")
def wait_group(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    queue(g, o).retire(attr_int(o, "group"))


def queue(g: Group, o: ir.Operation) -> Groups:
    """The groups a commit or wait op counts: wgmma's, or the TMA stores' bulk groups."""
    return g.mmas if o.name.startswith("nvvm.wgmma.") else g.stores


# threads, barriers, TMA


@op("gpu.thread_id")
def thread_id(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    return g.tid if "x" in str(o.attributes["dimension"]) else np.int64(0)


@op("gpu.block_id", "gpu.grid_dim", "gpu.block_dim")
def block_dims(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    d = "xyz".index(str(o.attributes["dimension"])[-2])
    if o.name == "gpu.block_dim":
        return np.int64(g.block.threads if d == 0 else 1)
    return np.int64((g.block.block_id if o.name == "gpu.block_id" else g.block.grid)[d])


@op("gpu.shuffle")
def shuffle(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    x, offset, width = (g.value(v) for v in o.operands)
    x = np.broadcast_to(np.asarray(x), (WARPGROUP,))
    lane = np.arange(WARPGROUP) % 32
    mode = str(o.attributes["mode"])
    offset = np.asarray(offset, dtype=np.int64)
    source = {"xor": lane ^ offset, "idx": offset + 0 * lane, "down": lane + offset,
              "up": lane - offset}[mode.split()[-1].rstrip(">")]  # fmt: skip
    valid = (source >= 0) & (source < 32)
    source = np.where(valid, source, lane)
    return x[np.arange(WARPGROUP) - lane + source], valid.astype(np.int64)


@op("nvvm.mbarrier.init")
def mbarrier_init(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    address, count = (uniform(g.value(v), mask) for v in o.operands)
    g.block.barriers[address] = MBarrier(count, count)


@op("nvvm.mbarrier.arrive")
def mbarrier_arrive(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    address = np.broadcast_to(np.asarray(g.value(o.operands[0])), mask.shape)[mask]
    for a in np.unique(address):
        g.block.barriers[int(a)].arrive(int((address == a).sum()))
    return np.int64(0)


@op("nvvm.mbarrier.arrive.expect_tx")
def mbarrier_expect_tx(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    bar = g.barrier(g.value(o.operands[0]), mask)
    nbytes = uniform(g.value(o.operands[1]), mask)
    bar.arrive(int(mask.sum()), int(mask.sum()) * nbytes)
    return np.int64(0)


@op("nvvm.cp.async.bulk.tensor.shared.cluster.global")
def tma_load(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    sizes = list(ir.DenseI32ArrayAttr(o.attributes["operandSegmentSizes"]))
    ops = list(o.operands)
    dst, desc = (uniform(g.value(v), mask) for v in ops[:2])
    coords = [uniform(g.value(v), mask) for v in ops[2 : 2 + sizes[2]]]
    barrier = uniform(g.value(ops[2 + sizes[2]]), mask)
    assert sizes[4:] == [0, 0, 0, 0] or sizes[4] == 0, "multicast is not emulated"
    tmap = g.block.maps[desc]
    nbytes = copy_box(g.block.memory, tmap, coords, dst)
    g.block.barriers[barrier].complete(nbytes)


@op("nvvm.cp.async.bulk.tensor.global.shared.cta")
def tma_store(g: Group, o: ir.Operation, mask: np.ndarray) -> None:
    """Queued in the thread's open bulk group: its shared bytes are read when a wait_group
    retires the group (the latest the hardware may read them), so a staging buffer rewritten
    before that wait stores the new values."""
    sizes = list(ir.DenseI32ArrayAttr(o.attributes["operandSegmentSizes"]))
    assert sizes[3:] == [0] * len(sizes[3:]), "a predicated or hinted store is not emulated"
    desc, src, *coords = (uniform(g.value(v), mask) for v in o.operands)
    mapped, memory = g.block.maps[desc], g.block.memory
    g.stores.add(lambda: store_box(memory, mapped, coords, src))


@op("builtin.unrealized_conversion_cast")
def cast(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    return tuple(g.get(v) for v in o.operands) if len(o.results) > 1 else g.get(o.operands[0])
