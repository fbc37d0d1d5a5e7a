"""Entry point of `tile-opt` (the logic lives in `tilec.opt`)."""

import sys

from tilec.opt import main as _main


def main() -> None:
    sys.exit(_main())


if __name__ == "__main__":
    main()
