"""The serve program (tritonops/host_programs/serve_release.py: python3 -c, stdlib only), which serves
a release on a host: stop the running container, start the release's, gate it, then switch `current`,
or put the previous one back and gate that. Fed one JSON document on stdin (what `ServeStep` sends);
prints one JSON document (the outcome).
"""

from tritonops import host_programs

SOURCE = host_programs.source("serve_release")
