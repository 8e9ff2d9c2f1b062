"""``python -m fattorus.tune``: entry point kept for users; the code is :mod:`fattorus.app.tune`."""

from fattorus.app.tune import main

if __name__ == "__main__":
    main()
