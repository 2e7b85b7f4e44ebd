"""``python -m loadtests.fit.cache_verifier``: see ``loadtests.fit.cache_verifier.cli``."""

import sys

from loadtests.fit.cache_verifier.cli import main

sys.exit(main())
