"""The package version: the single source (``pyproject.toml`` reads it, ``jaxcontact.__version__`` and
``jaxcontact --version`` report it)."""

__version__ = "0.1.0"
