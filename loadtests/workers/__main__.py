"""``python -m loadtests.workers``: see ``loadtests.workers.cli``."""

import sys

from loadtests.workers.cli import main

sys.exit(main())
