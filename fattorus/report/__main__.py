"""``python -m fattorus.report RESULTS_DIR``: see :func:`fattorus.report.main`."""

from fattorus import interrupt

interrupt.on_start("fattorus.report")  # first: a Ctrl-C while the imports below load is one line

import sys  # noqa: E402 - after the handler above

from fattorus.report import main, run_piped  # noqa: E402

# quiet, exit 141, when stdout's reader closes early (| head -1); one line, exit 130, on Ctrl-C
sys.exit(run_piped(lambda: interrupt.run("fattorus.report", main)))
