"""Run the benchmarks: `python -m benchmarks --help`."""

from __future__ import annotations

import sys

from .runner import main

sys.exit(main())
