"""``python -m loadtests.cache_quality``: see ``loadtests.cache_quality.cli``."""

import sys

from loadtests.cache_quality.cli import main

sys.exit(main())
