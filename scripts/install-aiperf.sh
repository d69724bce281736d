#!/usr/bin/env bash
# aiperf (NVIDIA's benchmark client, the maintained successor of genai-perf) in its own virtual environment, for
# `tritonops bench` (docs/bench.md): about 1.2 GB with its dependencies, and its pins clash with tritonops' own
# (rich ~=14.1 against our rich 15), so it is not an extra of tritonops but a command tritonops calls.
# Where: $TRITONOPS_AIPERF_VENV, else ~/.local/share/tritonops/aiperf ($XDG_DATA_HOME). Idempotent: a second run
# installs nothing. Sourced by scripts/bootstrap.sh (TRITONOPS_NO_AIPERF=1 leaves it out) and ./lab-demo.
set -euo pipefail
AIPERF_VERSION=${TRITONOPS_AIPERF_VERSION:-0.13.0}
AIPERF_VENV=${TRITONOPS_AIPERF_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/tritonops/aiperf}
if [ ! -f "$AIPERF_VENV/.aiperf-$AIPERF_VERSION" ]; then
  echo "install-aiperf: aiperf $AIPERF_VERSION into $AIPERF_VENV (about 1.2 GB, once)" >&2
  python3 -m venv "$AIPERF_VENV"
  "$AIPERF_VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$AIPERF_VENV/bin/python" -m pip install -q "aiperf==$AIPERF_VERSION"
  touch "$AIPERF_VENV/.aiperf-$AIPERF_VERSION"
fi
