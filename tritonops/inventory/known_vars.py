"""The tritonops_* variables tritonops understands. Adding one is one line in KNOWN_VARS.

Any other variable starting with `tritonops_` is a typo until proven otherwise: loading the
inventory fails at the file:line that set it. ansible_* and other user variables are free.
"""

from __future__ import annotations

from collections.abc import Iterable

from tritonops.errors import InputError
from tritonops.inventory.model import Setting
from tritonops.text import close_matches

PREFIX = "tritonops_"

KNOWN_VARS: dict[str, str] = {
    "tritonops_deployment": "name of the deployment: folder under tritonops_root and container name",
    "tritonops_root": "where deployments live on each host (default /opt/tritonops)",
    "tritonops_check_image": "check the release's vllm_env image is on the host before a release names it (default true)",
    "tritonops_weights_verify": "weights check on each run: quick (sizes and manifest) or full (every SHA-256)",
    "tritonops_keep_releases": "how many releases to keep per deployment (default 5)",
    "tritonops_http_port": "Triton's HTTP port on the host (default 8000)",
    "tritonops_grpc_port": "Triton's gRPC port on the host (default 8001)",
    "tritonops_metrics_port": "Triton's metrics port on the host (default 8002)",
    "tritonops_frontend": "the serving mode: kserve (tritonserver, the default) or openai (Triton's OpenAI frontend)",
    "tritonops_openai_port": "the OpenAI frontend's port on the host in tritonops_frontend openai (default 9000)",
    "tritonops_bind_address": "address Triton's ports are bound to (default 0.0.0.0; with balancers the host's "
                              "private address: tritonops_replica_address, else a private ansible_host); on a "
                              "balancer, where HAProxy's exporter binds (default: a private ansible_host)",
    "tritonops_metrics_address": "address Prometheus scrapes this host's metrics port at (default: a specific bind address, else ansible_host)",
    "tritonops_prometheus_file_sd": "Prometheus file_sd JSON file on the controller that deploy keeps the fleet's targets in (empty: none)",
    "tritonops_serve": "start the release's Triton container, gate it and switch current (default true)",
    "tritonops_ulimits": "docker run --ulimit values for the Triton container (default memlock=-1, stack=67108864)",
    "tritonops_triton_args": "more tritonserver flags for the Triton container (a list of --flag=value)",
    "tritonops_shm_size": "shared memory for the Triton container (empty: --ipc=host)",
    "tritonops_admin_key_file": "file on the host with the key for Triton's model-control/admin APIs (empty: open)",
    "tritonops_gate_prompt": "the prompt of the health gate's generate request",
    "tritonops_bench_gate_throughput": "deploy --bench-gate: the largest drop of output tokens/s against the previous release (default 0.10)",
    "tritonops_bench_gate_ttft_p99": "deploy --bench-gate: the largest rise of TTFT p99 against the previous release (default 0.25)",
    "tritonops_bench_gate_concurrency": "deploy --bench-gate: the concurrency levels of its bench (default 8)",
    "tritonops_bench_gate_requests": "deploy --bench-gate: requests per level (default 32)",
    "tritonops_bench_gate_input_tokens": "deploy --bench-gate: prompt tokens per request (default 128)",
    "tritonops_bench_gate_output_tokens": "deploy --bench-gate: output tokens per request (default 64)",
    "tritonops_rollback_to": "release id a rollback goes back to (empty: the newest earlier release that served)",
    "tritonops_engine_args_unchecked": "engine-argument names written to model.json without tritonops' version check",
    "tritonops_log_collector": "the log collector's address (syslog, fluentd, gelf drivers)",
    "tritonops_log_driver": "Docker logging driver of the Triton container (json-file, local, syslog, fluentd, "
                            "gelf, journald)",
    "tritonops_log_options": "more options of the logging driver",
    "tritonops_log_max_size": "rotation size of the host's local logs",
    "tritonops_log_max_file": "rotated local log files kept",
    "tritonops_log_buffer_size": "non-blocking log buffer (shipping never stalls Triton)",
    "tritonops_known_hosts_file": "known_hosts file used to verify this host's SSH key",
    "tritonops_connect_timeout": "seconds to wait for the SSH connection (default 10)",
    "tritonops_command_timeout": "seconds a single remote command may run",
    "tritonops_image_mode": "how the Triton image is made: official (NGC image) or committed (built)",
    "tritonops_vllm_version": "the vLLM version pinned for this deployment",
    "tritonops_model": "the model to serve (Hugging Face id or local path)",
    "tritonops_cluster": "hosts sharing this name run one model as a pipeline across them on a Ray cluster "
                         "(docs/pipeline.md)",
    "tritonops_pipeline_parallel_size": "hosts of the tritonops_cluster the pipeline spans (default: the fewest "
                                        "that hold the model)",
    "tritonops_node_address": "the IP address the other members of a tritonops_cluster reach this host at "
                              "(default: ansible_host when it is an IP address)",
    "tritonops_ray_requirement": "the Ray a tritonops_cluster member's vllm_env image installs beside vLLM "
                                 "(default the pinned ray[cgraph]; must name ray)",
    "tritonops_ray_object_store_bytes": "each Ray node's object store of a tritonops_cluster, in bytes (default: "
                                        "Ray's, 30% of memory; at least 75 MiB)",
    "tritonops_nccl_interface": "network interface NCCL and Gloo use between cluster members (default: their choice)",
    "tritonops_gpu_memory_utilization": "fraction of GPU memory vLLM may use (0..1)",
    "tritonops_max_model_len": "maximum context length; 'auto' lets tritonops size it",
    "tritonops_tensor_parallel_size": "GPUs one model instance spans",
    "tritonops_gpus": "the GPUs the deployment may use: a list of indices or \"0,2-3\" (default: all); the "
                      "containers get the best-linked groups of them",
    "tritonops_replicas": "Triton containers per host, each on its own GPU group serving every model: a number "
                          "(default 1) or auto (as many as the GPUs hold)",
    "tritonops_port_stride": "how far apart the replicas' ports are: replica i listens on the ports + i x stride "
                             "(default 10)",
    "tritonops_boot_first": "where GPUs are left over, a replica's new release boots there and passes its gate "
                            "before the old one stops (default true; false: stop, then start)",
    "tritonops_max_num_seqs": "maximum concurrent sequences per engine",
    "tritonops_door_http_port": "a balancer's (group tritonops_balancers) HTTP door for the deployment (default 8000)",
    "tritonops_door_grpc_port": "a balancer's gRPC door for the deployment (default 8001; off for none)",
    "tritonops_queue_timeout_ms": "a balancer's circuit breaker: longest wait for a free replica, then 503 (default 2000)",
    "tritonops_max_queue": "a balancer's circuit breaker: requests waiting at most, then 503 at once (default 256)",
    "tritonops_longest_generation_s": "a balancer's limit on one answer from a replica, in seconds (default 900)",
    "tritonops_drain_timeout_s": "a balancer's wait for a drained replica's requests to finish before it restarts (default 120)",
    "tritonops_api_keys_file": "file on a balancer with the bearer tokens that may call the deployment (empty: none needed)",
    "tritonops_tls_pem": "certificate and key (one PEM file on the balancer) its doors serve TLS with (empty: plain)",
    "tritonops_door_routing": "how a balancer's HTTP door picks a replica: leastconn (default) or prefix (requests "
                              "sharing a prompt prefix go to the replica whose prefix cache holds it, bounded load)",
    "tritonops_door_prefix_bytes": "routing prefix: the bytes of the prompt that make its key (default 1024)",
    "tritonops_door_balance_factor": "routing prefix: no replica takes another key's request past this percentage "
                                     "of the average load (default 150; 0: no bound)",
    "tritonops_door_address": "where clients (tritonops bench) reach a balancer's doors (default: its ansible_host)",
    "tritonops_replica_address": "address balancers reach this host's replicas at (default: a specific "
                                 "tritonops_bind_address, else ansible_host)",
    "tritonops_models": "several models on a host: a list of {name, model, version(s), engine overrides, engine_args}",
    "tritonops_engine_args": "extra vLLM engine arguments merged into model.json, checked against the vLLM version",
    "tritonops_swap_space_gib": "CPU memory for the KV cache, GiB per GPU: swap_space or KV-cache offloading (0: none)",
    "tritonops_build_host": "inventory host that builds images for this one",
    "tritonops_pip_index_url": "pip index URL used when building environments",
    "tritonops_pip_extra_index_url": "additional pip index URL",
    "tritonops_pip_trusted_host": "pip --trusted-host value",
    "tritonops_pip_extra_args": "extra arguments passed to pip install",
    "tritonops_pip_constraints": "pip constraints file (on the controller) used when building the vllm_env image",
    "tritonops_registry": "container registry images are pushed to and pulled from",
    "tritonops_relay_address": "address[:port] where other hosts reach its sshd to pass it the image or weights",
    "tritonops_relay_fanout": "the most hosts one host passes the image or weights on to (1-16, default 2)",
    "tritonops_triton_image": "the Triton server image (name:tag or digest)",
    "tritonops_weights_source": "where model weights come from: huggingface, modelscope, host_path or controller_dir",
    "tritonops_weights_repo": "hub repo of the weights (org/name) for huggingface or modelscope",
    "tritonops_weights_revision": "hub branch, tag or commit of the weights (pin a commit for repeatable deploys)",
    "tritonops_weights_path": "folder of the weights: on the host (host_path) or the controller (controller_dir)",
    "tritonops_hf_token_env": "environment variable on the controller holding the hub token (default HF_TOKEN)",
    "tritonops_hf_token_file": "file on the controller (mode 0600) holding the hub token",
    "tritonops_hf_endpoint": "hub mirror URL for weight downloads (HF_ENDPOINT / MODELSCOPE_DOMAIN)",
    "tritonops_weights_runner": "where the hub library runs on the host: image (vllm_env) or host (its python3)",
    "lab_gpu_profile": "lab only: simulated GPU profile of a lab host",
    "lab_kind": "lab only: what kind of lab host this is",
}


def check_known(settings: Iterable[tuple[str, Setting]]) -> None:
    """Fail on the first tritonops_* variable nobody knows, naming where it was set."""
    for name, setting in settings:
        if name.startswith(PREFIX) and name not in KNOWN_VARS:
            close = close_matches(name, KNOWN_VARS, n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else \
                "; see docs/inventory.md for the variables tritonops understands"
            raise InputError(f"unknown tritonops variable '{name}'{hint}", setting.where)
