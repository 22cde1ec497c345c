"""`python -m sqlmem ...` runs the command line, like the `sqlmem` script."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
