"""Run by aiperf's own interpreter (its virtual environment, not ours): `aiperf` with the door's API key
added to its arguments inside the process, from the environment, so the key is on no command line (`ps`,
/proc/<pid>/cmdline); aiperf hands it to its worker processes in their environment and redacts it in its
exports. Standard library and aiperf only."""

import os
import sys

KEY_VAR = "TRITONOPS_BENCH_API_KEY"


def main() -> int:
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
    key = os.environ.pop(KEY_VAR, None)
    sys.argv = ["aiperf", *sys.argv[1:], *(("--api-key", key) if key else ())]
    from aiperf.cli import app  # noqa: PLC0415 - aiperf's venv only

    return app()


if __name__ == "__main__":
    sys.exit(main())
