"""python -m arcops.cli (how the boxes run it: /usr/local/bin/arcops)."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
