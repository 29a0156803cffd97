"""``python -m windowfit``: the same command as ``windowfit``."""

from windowfit.cli.app import main

if __name__ == "__main__":
    main()
