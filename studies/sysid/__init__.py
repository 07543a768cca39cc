"""System identification study: ``python -m studies.sysid``; see README.md."""
