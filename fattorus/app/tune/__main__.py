"""``python -m fattorus.app.tune``: the same command as ``python -m fattorus.tune``."""

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.tune")

from fattorus.app.tune.cli import main

if __name__ == "__main__":
    main()
