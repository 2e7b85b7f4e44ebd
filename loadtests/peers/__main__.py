"""``python -m loadtests.peers``: see ``loadtests.peers.cli``."""

import sys

from loadtests.peers.cli import main

sys.exit(main())
