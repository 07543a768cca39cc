"""Paper reproductions built on jaxcontact, one package per family (``python -m studies.<family>``).

See studies/README.md. The engine benchmarks are in ``benchmarks/``.
"""
