"""``python -m windowfit``: the same command as ``windowfit``."""

from windowfit.cli.fast import main

if __name__ == "__main__":
    main()
