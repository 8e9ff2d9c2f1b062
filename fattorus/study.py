"""``python -m fattorus.study``: entry point kept for users; the code is :mod:`fattorus.app.study`."""

from fattorus.app.study import main

if __name__ == "__main__":
    main()
