"""``python -m fattorus.sweep``: entry point kept for users; the code is :mod:`fattorus.app.sweep`."""

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.sweep")

from fattorus.app.sweep import main

if __name__ == "__main__":
    main()
