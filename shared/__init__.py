"""What the server and the worker agree on: settings, errors, job contracts, Redis keys."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("learning-memory-server")
except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    __version__ = "0.0.0"
