"""Tooling shared by ``benchmarks/`` and ``studies/`` (which do not import each other): ``provenance``."""
