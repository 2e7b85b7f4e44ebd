"""``python -m loadtests.auto_overhead``: see ``loadtests.auto_overhead.cli``."""

import sys

from loadtests.auto_overhead.cli import main

sys.exit(main())
