"""Runtime: loads compiled bundles and launches them through cuda-python (imports no MLIR)."""
