"""`python -m paclo.perf`: the performance runner."""

import sys

from .cli import main

sys.exit(main())
