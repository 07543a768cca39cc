"""Studies of worlds of many bodies (``python -m studies.worlds``)."""
