"""``python -m loadtests.cache_verification``: see ``loadtests.cache_verification.cli``."""

import sys

from loadtests.cache_verification.cli import main

sys.exit(main())
