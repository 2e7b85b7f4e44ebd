"""``python -m loadtests.request_instructions``: see ``loadtests.request_instructions.cli``."""

import sys

from loadtests.request_instructions.cli import main

sys.exit(main())
