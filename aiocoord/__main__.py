"""``python -m aiocoord``: the command line of :mod:`aiocoord.cli`."""

import sys

from aiocoord.cli import DEFAULT_CONNECT, main

__all__ = ["DEFAULT_CONNECT", "main"]

if __name__ == "__main__":
    sys.exit(main())
