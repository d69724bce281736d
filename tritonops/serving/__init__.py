"""Serving a release: the Triton container's command line, the health gate and its verdicts (pure),
and the serve phase that starts a release, gates it and switches `current` or rolls back (I/O)."""
