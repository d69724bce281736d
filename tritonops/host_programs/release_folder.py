"""The release folder program: what a rollout changes in the deployment's folder on the host (stdlib only). The
controller runs the containers' own steps (docker over its session, tritonops/operations/serve_rollout.py); this
program does the folder's, each one SSH command.

    python3 -c SOURCE    stdin: one JSON document {action, root, ...}    stdout: one JSON document

    prepare  {admin_key_file, logger_path, logger_source[, release, serve]}: the restricted APIs' key made here the
             first time (0600; it never crosses the network), the container logger written when missing or
             different, the release's `serve` record rewritten when its replicas boot on their other slot -> {}
    record   {release, gate, if_none_passed}: a gate appended to the release's release.json -> {recorded}
    switch   {release, keep, previous}: `current` names the release, releases beyond the newest `keep` removed
             (never current or previous) -> {was, pruned}
"""

import json, sys

from tritonops.host_programs.basic import answer, fail
from tritonops.host_programs.release_files import current_release, prune, record_gate, record_serve, switch_current
from tritonops.host_programs.release_files import ensure_admin_key, install_logger


def main():
    spec = json.load(sys.stdin)
    action, root = spec.get("action"), spec.get("root")
    if not root:
        fail("no root given")
    if action == "prepare":
        ensure_admin_key(spec.get("admin_key_file"))
        if spec.get("logger_path"):
            install_logger(spec["logger_path"], spec["logger_source"])
        if spec.get("serve"):
            record_serve(root, spec["release"], spec["serve"])
        answer({})
    if action == "record":
        answer({"recorded": record_gate(root, spec["release"], spec["gate"], bool(spec.get("if_none_passed")))})
    if action == "switch":
        was = current_release(root)
        switch_current(root, spec["release"])
        answer({"was": was, "pruned": prune(root, int(spec.get("keep", 0)), spec["release"], spec.get("previous"))})
    fail("unknown action %r" % (action,))


if __name__ == "__main__":
    main()
