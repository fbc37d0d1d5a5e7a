"""Entry point of `tilec` (the logic lives in `tilec.cli`)."""

from tilec.tools import entry


def main() -> None:
    from tilec.cli import main as cli_main

    entry("tilec", cli_main)


if __name__ == "__main__":
    main()
