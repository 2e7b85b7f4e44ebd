"""``python -m loadtests.plan_stage``: see ``loadtests.plan_stage.cli``."""

import sys

from loadtests.plan_stage.cli import main

sys.exit(main())
