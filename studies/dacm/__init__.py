"""The dacm study (Data-driven Contact Models): ``python -m studies.dacm COMMAND``; see README.md."""
