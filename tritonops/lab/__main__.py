"""`python -m tritonops.lab releases|generate|door|prometheus|collector ...`: lab helpers that are not tritonops commands."""

import sys

from tritonops.lab import collector, door, generate, prometheus, releases

HELPERS = {"releases": releases.main, "generate": generate.main, "door": door.main, "prometheus": prometheus.main,
           "collector": collector.main}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in HELPERS:
        print(f"usage: python -m tritonops.lab {{{','.join(HELPERS)}}} ...", file=sys.stderr)
        sys.exit(2)
    sys.exit(HELPERS[sys.argv[1]](sys.argv[2:]))
