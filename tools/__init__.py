"""Entry points: `tilec` and `tile-opt`, thin wrappers over `tilec.cli` and `tilec.opt`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def entry(tool: str, main: Callable[[], int]) -> None:
    """Run a tool's main and exit with its status; a bug in tilec prints one line, not a trace.

    User errors are diagnostics long before this point; what reaches here is an internal error.
    `TILEC_DEBUG=1` lets the traceback through.
    """
    try:
        status = main()
    except KeyboardInterrupt:
        status = 130
    except BrokenPipeError:  # `tilec ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 141
    except Exception as exc:  # noqa: BLE001 - see the docstring
        if os.environ.get("TILEC_DEBUG"):
            raise
        print(
            f"{tool}: internal error: {type(exc).__name__}: {exc} "
            "(a bug in tilec; set TILEC_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        status = 2
    sys.exit(status)
