"""The one place that checks for the optional plotting dependency (``pip install "jaxcontact[plot]"``).

matplotlib is not part of the core install. Every plotting entry point calls ``require_matplotlib``
(the command line does so right after parsing, before any simulation or training starts), so a
missing matplotlib fails at once with a one-line message instead of after the computation.
"""

from __future__ import annotations

INSTALL_HINT = 'pip install "jaxcontact[plot]"'


class PlottingUnavailable(ImportError):
    """matplotlib is not installed; the message says how to install it."""


def require_matplotlib(what: str = "plotting") -> None:
    """Raise ``PlottingUnavailable`` (one line, with the install command) if matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlottingUnavailable(f"{what} needs matplotlib, which is not installed: {INSTALL_HINT}") from None


def pyplot(what: str = "plotting"):
    """``matplotlib.pyplot`` with a file backend (Agg) unless an inline/Agg backend is already active."""
    require_matplotlib(what)
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
