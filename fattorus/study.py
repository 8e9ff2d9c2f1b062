"""``python -m fattorus.study``: entry point kept for users; the code is :mod:`fattorus.app.study`."""

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.study")

from fattorus.app.study import main

if __name__ == "__main__":
    main()
