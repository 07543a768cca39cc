"""Planar impact study (Fazeli et al.): ``python -m studies.impacts``; see README.md."""
