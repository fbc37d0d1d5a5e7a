"""tilec: an open, MLIR-based compiler for a textual tile DSL."""

__version__ = "0.1.0"
