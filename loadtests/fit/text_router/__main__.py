"""``python -m loadtests.fit.text_router``: see ``loadtests.fit.text_router.cli``."""

import sys

from loadtests.fit.text_router.cli import main

sys.exit(main())
