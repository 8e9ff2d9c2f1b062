"""``python -m fattorus.interference``: entry point kept for users; the code is :mod:`fattorus.analysis.interference`."""

if __name__ == "__main__":  # first: a Ctrl-C while the imports below load is one line
    from fattorus import interrupt

    interrupt.on_start("fattorus.interference")

from fattorus.analysis.interference import main

if __name__ == "__main__":
    from fattorus.args import run_piped

    interrupt.exit_with(run_piped(lambda: interrupt.run("fattorus.interference", main)))  # quiet, exit 141, when stdout's reader closes early
