"""``python -m loadtests.cancellation``: see ``loadtests.cancellation.cli``."""

import sys

from loadtests.cancellation.cli import main

sys.exit(main())
