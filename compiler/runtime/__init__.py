"""Runtime: loads compiled bundles and launches them through cuda-python (imports no MLIR)."""

from tilec.runtime.bundle import (
    FORMAT_VERSION,
    Manifest,
    ManifestError,
    Requirement,
    ScalarParam,
    SizeParam,
    TensorParam,
    TmaDescriptor,
    TmaParam,
    read_bundle,
    write_bundle,
)
from tilec.runtime.formula import FormulaError, evaluate
from tilec.runtime.kernel import Kernel, load

__all__ = [
    "FORMAT_VERSION",
    "FormulaError",
    "Kernel",
    "Manifest",
    "ManifestError",
    "Requirement",
    "ScalarParam",
    "SizeParam",
    "TensorParam",
    "TmaDescriptor",
    "TmaParam",
    "evaluate",
    "load",
    "read_bundle",
    "write_bundle",
]
