"""``python -m loadtests.slo``: see ``loadtests.slo.cli``."""

import sys

from loadtests.slo.cli import main

sys.exit(main())
