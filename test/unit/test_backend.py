"""Backend stage tests: gpu-dialect kernels → LLVM IR → PTX on both paths, checked by ptxas."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mlir import ir, passmanager

from tilec import backend
from tilec.context import make_context

KERNELS = Path(__file__).resolve().parents[1] / "backend"
VADD = KERNELS / "vadd.gpu.mlir"
MBARRIER = KERNELS / "mbarrier.gpu.mlir"
ARCHS = ["sm_80", "sm_90a"]
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")


def parse(path: Path) -> ir.Module:
    ctx = make_context()
    with ctx, ir.Location.unknown():
        return ir.Module.parse(path.read_text())


def test_stage_pipelines_parse_and_compose() -> None:
    assert list(backend.STAGE_PIPELINES) == ["nvvm", "llvm"]
    with make_context():
        for piece in backend.STAGE_PIPELINES.values():
            passmanager.PassManager.parse(f"builtin.module({piece})")
        passmanager.PassManager.parse(backend.GPU_TO_LLVM_PIPELINE)
    for needed in (
        "convert-nvgpu-to-nvvm",
        "expand-strided-metadata",
        "convert-scf-to-cf",
        "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1}",
        "convert-nvvm-to-llvm",
        "reconcile-unrealized-casts",
    ):
        assert needed in backend.GPU_TO_LLVM_PIPELINE


def test_nvvm_stage_keeps_nvvm_ops_llvm_stage_removes_gpu_ops() -> None:
    module = parse(VADD)
    backend.lower(module, "nvvm")
    text = str(module)
    assert "gpu.func" not in text and "nvvm.read.ptx.sreg.tid.x" in text
    assert "nvvm.kernel" in text
    module = parse(MBARRIER)
    backend.lower(module, "nvvm")
    assert "nvvm.mbarrier.try_wait.parity" in str(module)
    backend.lower(module, "llvm")
    assert "nvvm.mbarrier.try_wait.parity" not in str(module)
    assert "mbarrier.try_wait.parity.shared.b64" in str(module)  # now inline PTX


def test_lower_rejects_unknown_stage() -> None:
    with pytest.raises(ValueError, match="stage"):
        backend.lower(parse(VADD), "ptx")


def test_llvm_ir_has_triple_layout_and_kernel_cc() -> None:
    module = backend.lower(parse(VADD))
    ll = backend.to_llvm_ir(module, "sm_90a")
    assert 'target triple = "nvptx64-nvidia-cuda"' in ll
    assert 'target datalayout = "e-' in ll
    assert "define ptx_kernel void @vadd(ptr addrspace(1)" in ll


@pytest.mark.parametrize("arch", ARCHS)
def test_vadd_ptx(arch: str) -> None:
    ptx = backend.compile_to_ptx(parse(VADD), arch)
    assert f".target {arch}" in ptx
    assert ".visible .entry vadd(" in ptx
    assert ptx.count("ld.global.") == 2 and ptx.count("st.global.") == 1
    assert backend.ptx_entries(ptx) == {
        "vadd": [".param .u64 .ptr .global .align 1"] * 3 + [".param .u64"]
    }


def test_unsupported_arch_named() -> None:
    with pytest.raises(ValueError, match="arch: unsupported target 'sm_70'"):
        backend.emit_ptx("", "sm_70")


def test_invalid_llvm_ir_is_a_backend_error() -> None:
    with pytest.raises(backend.BackendError, match="invalid LLVM IR"):
        backend.emit_ptx("define void @f() { ret i32 0 }", "sm_80")


def test_two_gpu_modules_need_a_name() -> None:
    text = VADD.read_text().replace("gpu.module @kernels", "gpu.module @a", 1)
    body = text[text.index("gpu.module @a") : text.rindex("}")]
    text = text[: text.rindex("}")] + body.replace("gpu.module @a", "gpu.module @b") + "}\n"
    ctx = make_context()
    with ctx:
        module = backend.lower(ir.Module.parse(text))
        with pytest.raises(backend.BackendError, match="exactly one gpu.module"):
            backend.to_llvm_ir(module, "sm_80")
        assert "@vadd" in backend.to_llvm_ir(module, "sm_80", gpu_module="b")


def test_unescape_mlir_string() -> None:
    assert backend._unescape_mlir_string(r"a\0Ab\09c\22d\\e") == 'a\nb\tc"d\\e'


PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k1' for 'sm_90a'
ptxas info    : Function properties for k1
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compiling entry function 'k2' for 'sm_90a'
ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized \
due to program dependence on compiler-inserted WG.AR in divergent path in the function 'k2'
ptxas info    : Function properties for k2
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers
"""


def test_parse_ptxas_verbose() -> None:
    got = backend.parse_ptxas_verbose(PTXAS_LOG)
    assert got["k1"] == backend.ResourceUsage("k1", 40, 8, 4, 1024, 16, 1)
    assert got["k2"] == backend.ResourceUsage("k2", registers=255, serialized=1)


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_llvmlite_and_mlir_paths_agree_and_assemble(arch: str) -> None:
    via_mlir = backend.ptx_via_mlir(parse(VADD), arch)
    via_llvmlite = backend.compile_to_ptx(parse(VADD), arch)
    assert backend.ptx_entries(via_mlir) == backend.ptx_entries(via_llvmlite)
    for ptx in (via_mlir, via_llvmlite):
        usage = backend.ptxas_report(ptx, arch)
        assert usage.name == "vadd"
        assert (usage.spill_stores, usage.spill_loads, usage.stack_frame) == (0, 0, 0)
        assert 0 < usage.registers < 64
        cubin = backend.assemble(ptx, arch)
        assert cubin[:4] == b"\x7fELF"


@needs_ptxas
def test_sm90_mbarrier_kernel_both_paths() -> None:
    via_llvmlite = backend.compile_to_ptx(parse(MBARRIER), "sm_90a")
    via_mlir = backend.ptx_via_mlir(parse(MBARRIER), "sm_90a")
    for ptx in (via_llvmlite, via_mlir):
        assert "mbarrier.try_wait.parity.shared.b64" in ptx
        assert "__nv_" not in ptx  # libdevice linked and inlined, not left as an extern call
        usage = backend.ptxas_report(ptx, "sm_90a")
        assert (usage.spill_stores, usage.spill_loads, usage.shared_bytes) == (0, 0, 8)
    assert backend.ptx_entries(via_llvmlite) == backend.ptx_entries(via_mlir)


@needs_ptxas
def test_ptxas_error_is_reported() -> None:
    with pytest.raises(backend.BackendError, match="ptxas failed for sm_80"):
        backend.assemble(".version 8.0\n.target sm_80\n.address_size 64\nbogus;\n", "sm_80")


def test_missing_ptxas_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend.shutil, "which", lambda name: None)
    with pytest.raises(backend.BackendError, match="ptxas not found on PATH"):
        backend.assemble("", "sm_80")


def test_cli_resources(capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas not on PATH")
    from tilec.cli import main

    assert main(["compile", str(VADD), "--arch", "sm_80", "--resource-usage", "-o", "-"]) == 0
    head, row = capsys.readouterr().err.splitlines()[-2:]
    assert (
        head.split()
        == "kernel registers spill stores B spill loads B shared B stack B barriers".split()
    )
    assert row.split()[0] == "vadd" and row.split()[2:] == ["0", "0", "0", "0", "0"]
    assert len(head) == len(row)  # columns line up


def test_resource_table_aligns_columns() -> None:
    reports = {
        "k": backend.ResourceUsage("k", registers=255, spill_stores=1024, barriers=1),
        "long_kernel_name": backend.ResourceUsage("long_kernel_name", registers=8),
    }
    assert backend.resource_table(reports).splitlines() == [
        "kernel            registers  spill stores B  spill loads B  shared B  stack B  barriers",
        "k                       255            1024              0         0        0         1",
        "long_kernel_name          8               0              0         0        0         0",
    ]


def test_ll_and_ptx_inputs_name_their_target(tmp_path: Path) -> None:
    """No --arch needed: the .ll carries "target-cpu", the PTX its `.target` directive."""
    from tilec.diagnostics import DiagnosticError
    from tilec.driver import CompileOptions, compile_file

    ll = compile_file(str(VADD), CompileOptions(emit="llvm", arch="sm_90a", start="gpu")).value
    assert '"target-cpu"="sm_90a"' in ll
    (tmp_path / "k.ll").write_text(ll)
    ptx = compile_file(str(tmp_path / "k.ll"), CompileOptions(emit="ptx"))
    assert ptx.arch == "sm_90a" and "\n.target sm_90a" in ptx.value
    (tmp_path / "k.ptx").write_text(ptx.value.replace(".target sm_90a", ".target sm_80"))
    assert compile_file(str(tmp_path / "k.ptx"), CompileOptions(emit="ptx")).arch == "sm_80"
    # --arch still wins over the file
    assert compile_file(
        str(tmp_path / "k.ptx"), CompileOptions(emit="ptx", arch="sm_90a")
    ).arch == ("sm_90a")
    (tmp_path / "old.ptx").write_text(".version 7.0\n.target sm_75\n")
    with pytest.raises(DiagnosticError) as info:
        compile_file(str(tmp_path / "old.ptx"), CompileOptions(emit="cubin"))
    assert info.value.diagnostics[0].message.endswith(
        "targets sm_75, which tilec does not build for"
    )
    (tmp_path / "bare.ll").write_text(ll.replace('"target-cpu"="sm_90a"', ""))
    with pytest.raises(DiagnosticError, match="no target"):
        compile_file(str(tmp_path / "bare.ll"), CompileOptions(emit="ptx"))


def test_resource_table_shows_each_warp_groups_registers_after_setmaxnreg() -> None:
    from tilec.backend import ResourceUsage, resource_table, setmaxnreg_counts

    ptx = (
        ".visible .entry ws(\n) {\n setmaxnreg.inc.sync.aligned.u32 232;\n"
        " setmaxnreg.dec.sync.aligned.u32 40;\n setmaxnreg.inc.sync.aligned.u32 232;\n}\n"
        ".visible .entry plain(\n) {\n ret;\n}\n"
    )
    assert setmaxnreg_counts(ptx) == {"ws": ["inc 232", "dec 40"]}
    reports = {"ws": ResourceUsage("ws", registers=168), "plain": ResourceUsage("plain", 16)}
    table = resource_table(reports, ptx).splitlines()
    assert table[0].endswith("registers per warp group (setmaxnreg)")
    assert table[1].split()[0] == "ws" and table[1].endswith("inc 232, dec 40")
    assert table[2].split()[0] == "plain" and table[2].endswith("-")
    assert "setmaxnreg" not in resource_table({"plain": reports["plain"]}, ".entry plain(\n)")
