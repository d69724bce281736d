#!/bin/sh
# PID 2 of a lab host (docker's init is PID 1): per-host GPU setup, the inner engine, then sshd.
set -eu
PROFILE=/etc/tritonops-lab/gpu-profile
if [ -f "$PROFILE" ]; then
    # A host with an NVIDIA "driver": the library on the loader path, and (full hosts) the
    # container hook on the inner engine's PATH, so `docker run --gpus` is accepted.
    ln -sf /opt/tritonops-lab/lib/libnvidia-ml.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1
    if [ -f /opt/tritonops-lab/bin/nvidia-container-runtime-hook ]; then
        ln -sf /opt/tritonops-lab/bin/nvidia-container-runtime-hook /usr/local/bin/nvidia-container-runtime-hook
    fi
else
    rm -f /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 /usr/local/bin/nvidia-container-runtime-hook
fi
ldconfig
mkdir -p /run/sshd
if command -v dockerd >/dev/null 2>&1; then
    dockerd >/var/log/dockerd.log 2>&1 &
fi
exec /usr/sbin/sshd -D -e
