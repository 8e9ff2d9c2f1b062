"""``python -m fattorus.interference``: entry point kept for users; the code is :mod:`fattorus.analysis.interference`."""

import sys

from fattorus.analysis.interference import main

if __name__ == "__main__":
    sys.exit(main())
