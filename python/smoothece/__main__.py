"""``python -m smoothece``: the same command line as the ``smoothece`` script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
