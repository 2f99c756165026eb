"""aiocoord: asyncio-native coordination for Apache ZooKeeper."""

from aiocoord.errors import *  # noqa: F403
from aiocoord.errors import __all__ as _errors_all

__version__ = "0.1.0"
__all__ = [*_errors_all, "__version__"]
