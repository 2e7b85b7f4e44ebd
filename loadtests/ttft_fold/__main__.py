"""``python -m loadtests.ttft_fold``: see ``loadtests.ttft_fold.cli``."""

import sys

from loadtests.ttft_fold.cli import main

sys.exit(main())
