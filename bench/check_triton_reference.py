"""CPU checks of bench_gemm.py's Triton reference kernels, for a machine without a GPU or torch.

    python bench/check_triton_reference.py interpret   # numerics in Triton's interpreter
    python bench/check_triton_reference.py compile     # every config, cross-compiled for sm_90

Needs `triton` (a CPU machine can install the wheel; torch is not needed: bench_gemm is imported
with a stand-in `torch` module, and the interpreter runs on numpy-backed stand-in tensors).

`interpret` runs the `tutorial` and `descriptor` variants (the bench's wrappers, the autotuner
held to one small config) on ragged shapes (several GROUP_SIZE_M groups, a partial last one,
M < BLOCK_SIZE_M, a K tail) in all four operand layouts and compares with a numpy f32
product; it exits 1 on a wrong result. Triton
3.6's interpreter needs numpy < 2.3 (it calls int() on one-element arrays).

`compile` compiles every autotune config of both variants (and the `masked` kernel's) for
sm_90 without a GPU and prints, per config, the shared memory it needs and what the PTX uses:
wgmma, 16-byte cp.async (the tutorial form) or cp.async.bulk.tensor (TMA, the descriptor form).
Configs needing more than the H200's 227 KiB of shared memory are the ones the autotuner skips.

Neither says anything about speed: that is `bench_gemm.py` on the GPU.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import types
from pathlib import Path

if "torch" not in sys.modules:
    sys.modules["torch"] = types.ModuleType("torch")  # bench_gemm needs only the name at import


def _bench():
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_gemm

    return bench_gemm


class _Dtype:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:  # what Triton reads to type a tensor argument
        return f"torch.{self.name}"


class _Storage:
    def __init__(self, buf):
        self.buf = buf

    def data_ptr(self) -> int:
        return self.buf.ctypes.data

    def cpu(self):
        return self

    def copy_(self, other) -> None:
        pass


class _Tensor:
    """The little of torch.Tensor that Triton's interpreter touches, over a numpy buffer."""

    def __init__(self, buf=None, offset=0, shape=(), strides=(), dtype=None):
        self.buf, self.offset = buf, offset
        self.shape, self.strides = tuple(shape), tuple(strides)
        self.dtype = dtype

    @staticmethod
    def of(array):
        import numpy as np

        buf = np.ascontiguousarray(array)
        names = {np.float16: "float16", np.float32: "float32", np.int8: "int8"}
        strides = tuple(s // buf.itemsize for s in buf.strides)
        return _Tensor(buf, 0, buf.shape, strides, _Dtype(names[buf.dtype.type]))

    def data_ptr(self) -> int:
        return self.buf.ctypes.data + self.offset * self.buf.itemsize

    def untyped_storage(self):
        return _Storage(self.buf)

    def storage_offset(self) -> int:
        return self.offset

    def size(self, i=None):
        return self.shape if i is None else self.shape[i]

    def stride(self, i=None):
        return self.strides if i is None else self.strides[i]

    def element_size(self) -> int:
        return self.buf.itemsize

    def new_empty(self, *args, **kwargs):
        return _Tensor(dtype=self.dtype)

    def set_(self, storage, offset, size, stride):
        self.buf, self.offset, self.shape, self.strides = storage.buf, offset, size, stride
        return self

    def copy_(self, other) -> None:
        pass

    @property
    def T(self):  # noqa: N802 - torch's name
        return _Tensor(self.buf, self.offset, self.shape[::-1], self.strides[::-1], self.dtype)

    def numpy(self):
        import numpy as np

        flat = self.buf.reshape(-1)[self.offset :]
        size = self.buf.itemsize
        return np.lib.stride_tricks.as_strided(flat, self.shape, [s * size for s in self.strides])


def _operand(rows: int, k: int, mn_major: bool, rng):
    import numpy as np

    t = _Tensor.of(rng.standard_normal((k, rows) if mn_major else (rows, k)).astype(np.float16))
    return t.T if mn_major else t


def interpret() -> int:
    os.environ["TRITON_INTERPRET"] = "1"  # before the kernels are defined
    import numpy as np

    bg = _bench()
    bad = 0
    bm, bn, bk = 32, 64, 32
    one = bg.triton.Config(
        {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8}
    )
    for tuned in (bg._tutorial_gemm, bg._descriptor_gemm):
        tuned.configs = [one]  # one config: the autotuner runs it without timing (no GPU)
    bg._alloc_scratch = lambda size, align, stream: _Tensor.of(np.zeros(size, np.int8))
    for m, n, k in [(96, 160, 96), (40, 72, 72), (16, 64, 64), (304, 136, 40)]:
        for ma in (False, True):
            for mb in (False, True):
                rng = np.random.default_rng(0)
                a, b = _operand(m, k, ma, rng), _operand(n, k, mb, rng)
                ref = 0.5 * (a.numpy().astype(np.float32) @ b.numpy().astype(np.float32).T)
                for variant in ("tutorial", "descriptor"):
                    c = _Tensor.of(np.full((m, n), np.nan, dtype=np.float16))
                    assert variant != "descriptor" or bg.descriptor_supported(a, b, c)
                    bg.TRITON_VARIANTS[variant](a, b, c, 0.5)  # the bench's own wrappers
                    got = c.numpy().astype(np.float32)
                    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
                    ok = err < 1e-2
                    bad += not ok
                    layout = f"A {'M' if ma else 'K'}-major, B {'N' if mb else 'K'}-major"
                    verdict = "ok" if ok else "WRONG"
                    print(f"{variant:10} {m}x{n}x{k} {layout}: relative error {err:.1e} {verdict}")
    return 1 if bad else 0


def _summary(kernel) -> str:
    ptx = kernel.asm["ptx"]
    wgmma = len(re.findall(r"wgmma\.mma_async", ptx))
    cp16 = len(re.findall(r"cp\.async\.c[ag]\.shared\.global[^;]*, (?:16|0x10)\b", ptx))
    tma = len(re.findall(r"cp\.async\.bulk\.tensor", ptx))
    smem = kernel.metadata.shared
    fits = "" if smem <= 232448 else " (over 227 KiB: skipped by the autotuner)"
    return f"smem {smem}{fits}, wgmma {wgmma}, cp.async 16 B {cp16}, TMA {tma}"


def compile_all(dtype: str) -> int:
    import triton
    from triton.backends.compiler import GPUTarget

    bg = _bench()
    target = GPUTarget("cuda", 90, 32)
    d = "fp16" if dtype == "f16" else "bf16"
    ptrs = {"a_ptr": f"*{d}", "b_ptr": f"*{d}", "c_ptr": f"*{d}"}

    def build(jit, ints, ones, consts, stages, warps):
        sig = {**ptrs, **{n: "i32" for n in ints}, "alpha": "fp32"}
        signature = {n: "constexpr" if n in consts or n in ones else sig[n] for n in jit.arg_names}
        div = [n for n in jit.arg_names if n in ptrs or n in ints]
        attrs = {(jit.arg_names.index(n),): [["tt.divisibility", 16]] for n in div}
        src = triton.compiler.ASTSource(
            fn=jit,
            signature=signature,
            constexprs={**consts, **dict.fromkeys(ones, 1)},
            attrs=attrs,
        )
        return triton.compile(
            src, target=target, options={"num_warps": warps, "num_stages": stages}
        )

    tut_layouts = {  # stride arguments specialised to 1, and those left (16-divisible) integers
        "A K-major, B K-major": ["stride_ak", "stride_bk"],
        "A M-major, B N-major": ["stride_am", "stride_bn"],
    }
    failed = 0
    for bm, bn, bk, stages, warps in bg.TUTORIAL_CONFIGS:
        meta = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8}
        name = f"{bm}x{bn}x{bk} s{stages} w{warps}"
        jobs = []
        for layout, ones in tut_layouts.items():
            strides = ["stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm"]
            ints = ["M", "N", "K", *[s for s in strides if s not in ones]]
            fn = bg._tutorial_gemm.fn
            jobs.append((f"tutorial   {layout}", fn, ints, [*ones, "stride_cn"], meta))
        for a_mn in (False, True):
            for b_mn in (False, True):
                layout = f"A {'M' if a_mn else 'K'}-major, B {'N' if b_mn else 'K'}-major"
                ints = ["M", "N", "K", "stride_a", "stride_b", "stride_c"]
                consts = {**meta, "A_MN": a_mn, "B_MN": b_mn}
                jobs.append((f"descriptor {layout}", bg._descriptor_gemm.fn, ints, [], consts))
        for label, fn, ints, ones, consts in jobs:
            try:
                kernel = build(fn, ints, ones, consts, stages, warps)
                print(f"{name:18} {label}: {_summary(kernel)}", flush=True)
            except Exception as exc:  # noqa: BLE001 - reported; the others still compile
                failed += 1
                print(f"{name:18} {label}: FAILED {type(exc).__name__}: {exc}", flush=True)
    for cfg in bg._configs():
        kw = cfg.kwargs
        fn = bg._triton_gemm.fn
        sig = {"a": f"*{d}", "b": f"*{d}", "c": f"*{d}", "alpha": "fp32"}
        sig.update({n: "i32" for n in ("M", "N", "K", "sam", "sbn")})
        consts = {**kw, "sak": 1, "sbk": 1}
        signature = {n: "constexpr" if n in consts else sig[n] for n in fn.arg_names}
        div = [n for n in fn.arg_names if n in sig and n != "alpha"]
        attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in div}
        src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=consts, attrs=attrs)
        opts = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
        name = f"{kw['BM']}x{kw['BN']}x{kw['BK']} s{cfg.num_stages} w{cfg.num_warps}"
        try:
            kernel = triton.compile(src, target=target, options=opts)
            print(f"{name:18} masked     A K-major, B K-major: {_summary(kernel)}", flush=True)
        except Exception as exc:  # noqa: BLE001
            failed += 1
            print(f"{name:18} masked: FAILED {type(exc).__name__}: {exc}", flush=True)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("mode", choices=("interpret", "compile"))
    parser.add_argument("--dtype", default="f16", choices=("f16", "bf16"), help="for compile")
    args = parser.parse_args()
    sys.exit(interpret() if args.mode == "interpret" else compile_all(args.dtype))


if __name__ == "__main__":
    main()
