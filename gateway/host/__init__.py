"""One host's workers as one gateway (``serve --workers N``): the board they share in memory
(``board``), their figures on it (``shares``), the host's rate-limit buckets (``buckets``),
and how a worker reaches its siblings (``peers``)."""
