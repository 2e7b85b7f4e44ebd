"""``python -m loadtests.metric_updates``: see ``loadtests.metric_updates.cli``."""

import sys

from loadtests.metric_updates.cli import main

sys.exit(main())
