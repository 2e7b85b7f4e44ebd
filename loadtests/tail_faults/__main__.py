"""``python -m loadtests.tail_faults``: see ``cli.py``."""

from loadtests.tail_faults.cli import main

raise SystemExit(main())
