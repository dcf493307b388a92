"""`python -m gateway`: the same command line as `a2a-gateway` (gateway/cli.py)."""

import sys

from gateway.cli import main

if __name__ == "__main__":
    sys.exit(main())
