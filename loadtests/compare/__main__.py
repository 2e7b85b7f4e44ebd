"""``python -m loadtests.compare``: see ``loadtests.compare.cli``."""

import sys

from loadtests.compare.cli import main

sys.exit(main())
