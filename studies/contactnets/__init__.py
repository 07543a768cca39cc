"""The ContactNets study on the real cube tosses: ``python -m studies.contactnets COMMAND``; see README.md."""
