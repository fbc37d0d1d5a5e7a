"""lit configuration: IR, frontend and PTX tests run through tile-opt, tilec and filecheck."""

import os
import shutil
import sys

import lit.formats

config.name = "tilec"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".tile"]
config.excludes = ["unit", "gpu", "Inputs", "Output", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

bin_dir = os.path.dirname(sys.executable)


def tool(name: str) -> str:
    """The tool installed beside this Python (the project's venv), else the one on PATH."""
    local = os.path.join(bin_dir, name)
    found = local if os.path.exists(local) else shutil.which(name)
    if found is None:
        lit_config.fatal(f"'{name}' not found beside {sys.executable} or on PATH")
    return found


# A tool's name is replaced only where it stands as a command word: after the start of the
# line, a blank or a shell separator, and before a blank. A path holding the same word (a
# checkout named `tilec`: `/home/me/tilec/examples/...`) is left alone, and `%repo` is
# substituted after the tools, so its expansion is never rewritten.
for name in ("tile-opt", "tilec", "filecheck"):
    config.substitutions.append((rf"(?<![^\s|;&(]){name}(?=\s|$)", tool(name)))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%repo", os.path.dirname(config.test_source_root)))

config.environment["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
for var in ("HOME", "TILEC_CACHE_DIR", "CUDA_HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
if shutil.which("ptxas"):
    config.available_features.add("ptxas")
