"""``python -m loadtests.router_quality``: see ``loadtests.router_quality.cli``."""

import sys

from loadtests.router_quality.cli import main

sys.exit(main())
