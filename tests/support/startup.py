"""What a command loads at start-up, seen from a fresh interpreter."""

import json
import subprocess
import sys

# Runs main(argv) in a fresh interpreter and prints the top-level packages and command modules it loaded.
PROBE = """
import json, sys
from tritonops.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
sys.stdout.flush()
print("\\n@@", json.dumps({"code": code, "modules": sorted({name.split(".")[0] for name in sys.modules}),
                           "commands": sorted(name for name in sys.modules if name.startswith("tritonops.cli.cmd_"))}))
"""


def report(*argv: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout.rsplit("\n@@ ", 1)[1])


def loaded(*argv: str) -> tuple[int, set[str]]:
    found = report(*argv)
    return found["code"], set(found["modules"])
