"""``python -m fattorus.tune``: entry point kept for users; the code is :mod:`fattorus.app.tune`."""

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.tune")

from fattorus.app.tune import main

if __name__ == "__main__":
    main()
