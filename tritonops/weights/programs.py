"""The programs the weights steps run on a host (tritonops/host_programs/weights_files.py and
weights_hub.py), sent as `python3 -c SOURCE ACTION` (values on stdin as JSON, never pasted into the
source or a command line).

FILES (stdlib only, the host's python3):
    fact       what is in the model folder, its staging twin and a host path; free disk
    reopen     FINAL STAGING: a folder that failed verification becomes the staging folder again
    remove     PATH: a folder or link at the final path, before a folder or link replaces it
    discard    stdin {staging, paths}: drop files that failed verification
    finalize   stdin {staging, final, manifest}: hash every file against the manifest, drop the
               rest, write the manifest (with stamps) last, fsync, rename staging -> final
    link       FINAL TARGET: point the final path at a host path (temp link, rename)

HUB (needs `huggingface_hub` or `modelscope` where it runs: the host's python3 or an image):
    stdin {kind, repo, revision, include, staging, token, endpoint}: resolve the revision and the
    files with their sizes and hashes, refuse when the disk is too small (before any byte moves),
    fetch each missing file to `<name>.part` (resumed from its size with an HTTP Range), verify it,
    rename it to `<name>`; prints one JSON line {commit, files, bytes}.
Exit codes: 65 verification failed, 69 the hub library is missing, 74 a download cut short, 75 not enough disk.
"""

from __future__ import annotations

from tritonops import host_programs

EXIT_MISMATCH = 65
EXIT_NO_LIBRARY = 69
EXIT_CUT = 74  # a download cut short: what arrived is kept for the next run
EXIT_NO_SPACE = 75

FILES = host_programs.source("weights_files")  # host_programs/weights_files.py
HUB = host_programs.source("weights_hub")  # host_programs/weights_hub.py


def files_argv(action: str, *values: str, python: str = "python3") -> tuple[str, ...]:
    return host_programs.argv("weights_files", action, *values, python=python)
