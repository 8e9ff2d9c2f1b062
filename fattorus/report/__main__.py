"""``python -m fattorus.report RESULTS_DIR``: see :func:`fattorus.report.main`."""

import sys

from fattorus.report import main

sys.exit(main())
