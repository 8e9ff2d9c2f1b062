"""``python -m fattorus.report RESULTS_DIR``: see :func:`fattorus.report.main`."""

import sys

from fattorus.report import main, run_piped

sys.exit(run_piped(main))  # quiet, exit 141, when stdout's reader closes early (| head -1)
