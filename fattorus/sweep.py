"""``python -m fattorus.sweep``: entry point kept for users; the code is :mod:`fattorus.app.sweep`."""

from fattorus.app.sweep import main

if __name__ == "__main__":
    main()
