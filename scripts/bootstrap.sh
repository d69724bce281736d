# Sourced by ./lab-demo and ./run-tests: make a fresh Debian/Ubuntu machine (as root)
# ready to run tritonops. Idempotent: a second run installs nothing.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

need_apt=()
command -v python3 >/dev/null || need_apt+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
command -v gcc >/dev/null || need_apt+=(gcc libc6-dev)
command -v ssh >/dev/null || need_apt+=(openssh-client)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
command -v dockerd >/dev/null || need_apt+=(docker.io)
command -v curl >/dev/null || need_apt+=(curl)
command -v prometheus >/dev/null || need_apt+=(prometheus)  # the lab's Prometheus and promtool (docs/metrics.md)
command -v haproxy >/dev/null || need_apt+=(haproxy)  # the front door: its configs are checked with haproxy -c (issue #31)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap: installing ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" ca-certificates >/dev/null
fi

VENV=${TRITONOPS_VENV:-$REPO/.venv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
stamp="$VENV/.tritonops-installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$VENV/bin/python" -m pip install -q -e ".[test,bench]"
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
# aiperf for `tritonops bench` and its lab tests, in its own venv (its pins clash with ours: docs/bench.md)
# (exported: the tests give each run its own HOME, and still find it)
export TRITONOPS_AIPERF_VENV=${TRITONOPS_AIPERF_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/tritonops/aiperf}
[ -n "${TRITONOPS_NO_AIPERF:-}" ] || bash "$REPO/scripts/install-aiperf.sh"
