"""``python -m benchmarks NAME [options]`` runs one benchmark; ``python -m benchmarks`` lists them
(``benchmarks/runner.py``: the registry, the shared options, the results writer)."""

import sys

from .runner import main

sys.exit(main())
