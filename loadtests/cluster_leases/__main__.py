"""``python -m loadtests.cluster_leases``: see ``loadtests.cluster_leases.cli``."""

import sys

from loadtests.cluster_leases.cli import main

sys.exit(main())
