"""``python -m loadtests.overhead``: see ``loadtests.overhead.cli``."""

import sys

from loadtests.overhead.cli import main

sys.exit(main())
