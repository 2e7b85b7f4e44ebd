"""Entry point of ``python -m loadtests.loadgen``."""

import sys

from loadtests.loadgen.cli import main

sys.exit(main())
