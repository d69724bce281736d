"""The lab's package index: a stand-in `vllm` wheel behind a PEP 503 simple index over HTTP.

`pip install vllm==<pin> --index-url http://127.0.0.1:<port>/simple --trusted-host 127.0.0.1`
resolves here, through the same mirror settings a user sets in the inventory
(tritonops_pip_index_url, tritonops_pip_trusted_host). The index runs on a lab host's loopback;
the build container shares that host's network, so nothing leaves the lab.

The stand-in `vllm` is a test fixture: it never ships outside the lab.
"""

from tritonops.lab.wheelhouse.index import (INDEX_DIR, LAB_VLLM_VERSION, build_index, index_answers, index_files,
                                            index_url, serve_local, serve_on_host, stop_on_host)
from tritonops.lab.wheelhouse.wheel import build_wheel, wheel_bytes

__all__ = ["INDEX_DIR", "LAB_VLLM_VERSION", "build_index", "build_wheel", "index_answers", "index_files",
           "index_url", "serve_local", "serve_on_host", "stop_on_host", "wheel_bytes"]
