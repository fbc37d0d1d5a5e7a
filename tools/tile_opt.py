"""Entry point of `tile-opt` (the logic lives in `tilec.opt`)."""

from tilec.tools import entry


def main() -> None:
    from tilec.opt import main as opt_main

    entry("tile-opt", opt_main)


if __name__ == "__main__":
    main()
