"""tilec.options: mlir-opt's command-line rules, and the option table both tools share."""

import argparse

import pytest

from tilec.options import (
    OPTIONS,
    TILE_OPT,
    TILEC,
    CommandLineError,
    Step,
    add_to_argparse,
    asm_flags,
    parse_command_line,
)


def read(*argv: str):  # noqa: ANN201 - a CommandLine
    return parse_command_line(list(argv), TILE_OPT)


def test_one_dash_or_two_and_values_after_equals_or_next() -> None:
    for dashes in ("-", "--"):
        line = read(f"{dashes}split-input-file", f"{dashes}verify-diagnostics", "in.mlir")
        assert line.split_input_file == "" and line.verify_diagnostics == ""
        assert line.inputs == ["in.mlir"]
    assert read("-o", "out.mlir").o == "out.mlir"
    assert read("-o=out.mlir").o == "out.mlir"
    assert read("--split-input-file=// cut").split_input_file == "// cut"
    assert read("-verify-diagnostics=only-expected").verify_diagnostics == "only-expected"
    assert read("-mlir-elide-elementsattrs-if-larger=16").mlir_elide_elementsattrs_if_larger == 16


def test_flags_take_true_or_false() -> None:
    assert read("-verify-each=false").verify_each is False
    assert read("-verify-each=0").verify_each is False
    assert read("-verify-each").verify_each is True
    assert read().verify_each is True
    with pytest.raises(CommandLineError, match="takes true or false"):
        read("-verify-each=maybe")


def test_unknown_names_are_pass_flags_in_order_with_p_specs() -> None:
    line = read("-canonicalize", "-p", "tile-verify,cse", "--convert-gpu-to-nvvm=has-redux=1")
    assert line.steps == [
        Step("pass", "canonicalize", "", "-canonicalize"),
        Step("pipeline", "tile-verify,cse", flag="-p"),
        Step("pass", "convert-gpu-to-nvvm", "has-redux=1", "--convert-gpu-to-nvvm=has-redux=1"),
    ]
    assert line.p == ["tile-verify,cse"]


def test_pass_pipeline_is_its_own_option_not_p() -> None:
    line = read("-pass-pipeline=builtin.module(cse)")
    assert line.pass_pipeline == "builtin.module(cse)" and line.p == [] and line.steps == []


def test_stdin_dash_and_double_dash() -> None:
    assert read("-").inputs == ["-"]
    assert read("--", "-weird.mlir").inputs == ["-weird.mlir"]


def test_missing_value_and_unsupported_options_are_errors() -> None:
    with pytest.raises(CommandLineError, match="needs a value"):
        read("-o")
    with pytest.raises(CommandLineError, match="not available in tile-opt"):
        read("-mlir-print-value-users")


def test_tilec_takes_the_shared_options_in_both_spellings() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    add_to_argparse(parser)
    args = parser.parse_args(["-mlir-print-op-generic", "--mlir-timing", "--timing", "k.tile"])
    assert args.mlir_print_op_generic and args.mlir_timing and args.input == "k.tile"
    args = parser.parse_args(["--verify-diagnostics", "k.tile"])
    assert args.verify_diagnostics == "" and args.input == "k.tile"
    assert asm_flags(args)["print_generic_op_form"] is False
    shared = {o.name for o in OPTIONS if TILEC in o.tools and TILE_OPT in o.tools}
    assert {"mlir-print-debuginfo", "load-pass-plugin", "mlir-print-ir-after-all"} <= shared


def test_asm_flags_follow_the_printing_options() -> None:
    flags = asm_flags(read("-mlir-print-local-scope", "-mlir-pretty-debuginfo"))
    assert flags["use_local_scope"] and flags["pretty_debug_info"] and flags["enable_debug_info"]
    assert asm_flags(None)["print_generic_op_form"] is False


def test_split_input_names_buffers_as_mlir_opt() -> None:
    from tilec.opt import split_input

    source = "a\n// -----\nb\nc\n// -----\nd"
    chunks, warnings = split_input(source, "x.mlir", "// -----")
    assert [(c.text, c.name, c.first_line) for c in chunks] == [
        ("a\n", "within split at x.mlir:1 offset ", 1),
        ("\nb\nc\n", "within split at x.mlir:2 offset ", 2),
        ("\nd", "within split at x.mlir:5 offset ", 5),
    ]
    assert warnings == []
    chunks, warnings = split_input("a\n// ---\nb", "x.mlir", "// -----")
    assert len(chunks) == 1 and warnings == ["x.mlir:2: warning: near miss with file split marker"]
    assert split_input("a", "x.mlir", None)[0][0].name == "x.mlir"
