"""Entry point of `tilec` (the logic lives in `tilec.cli`)."""

import sys

from tilec.cli import main as _main


def main() -> None:
    sys.exit(_main())


if __name__ == "__main__":
    main()
