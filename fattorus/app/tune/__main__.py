"""``python -m fattorus.app.tune``: the same command as ``python -m fattorus.tune``."""

from fattorus.app.tune.cli import main

if __name__ == "__main__":
    main()
