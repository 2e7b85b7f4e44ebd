"""``python -m loadtests.difficulty_proxies``: see ``loadtests.difficulty_proxies.cli``."""

import sys

from loadtests.difficulty_proxies.cli import main

sys.exit(main())
