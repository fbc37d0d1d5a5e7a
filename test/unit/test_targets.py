"""tilec.targets is the one table of target facts: its values, and every reader agrees with it."""

from __future__ import annotations

from tilec import backend, driver, targets
from tilec.cli import build_parser
from tilec.frontend import atoms


def test_values() -> None:
    assert targets.TARGETS == ("sm_80", "sm_90a")
    assert targets.smem_optin("sm_80") == 163 * 1024
    assert targets.smem_optin("sm_90a") == 227 * 1024
    assert targets.smem_optin("sm_86") == 99 * 1024
    assert targets.smem_optin("sm_70") == targets.smem_optin(None) == 48 * 1024
    assert targets.has_setmaxnreg("sm_90a")
    assert not targets.has_setmaxnreg("sm_80") and not targets.has_setmaxnreg(None)
    assert set(targets.TARGETS) <= set(targets.TABLE)


def test_readers_take_it_from_the_table() -> None:
    assert backend.ARCH_FEATURES == {n: t.ptx_features for n, t in targets.TABLE.items()}
    assert backend.ARCH_FEATURES["sm_90a"] == "+ptx80"
    assert driver.ARCHES == targets.TARGETS
    assert atoms.BOTH == frozenset(targets.TARGETS)
    compile_args = build_parser()._subparsers._group_actions[0].choices["compile"]
    arch = next(a for a in compile_args._actions if a.dest == "arch")
    assert tuple(arch.choices) == targets.TARGETS
