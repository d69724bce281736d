"""The Triton container's command line and the gate's reading of logs, by equality."""

import pytest

from tritonops.serving.container import Ports, ServeSpec, logging_digest, run_argv
from tritonops.serving.verdict import Reason, classify, gate_deadline_s, kv_cache_tokens

SPEC = ServeSpec(deployment="prod", release="20261201T080000Z-6533bf3f",
                 release_dir="/opt/tritonops/prod/releases/20261201T080000Z-6533bf3f",
                 image_id="sha256:" + "9" * 64, gpus=(0, 1),
                 weights_dirs=("/opt/tritonops/prod/models/Qwen--Qwen2.5-7B-Instruct@main",))


def test_docker_run_for_a_tensor_parallel_release():
    assert run_argv(SPEC) == (
        "docker", "run", "--detach", "--name", "tritonops-prod",
        "--label", "tritonops.deployment=prod", "--label", "tritonops.release=20261201T080000Z-6533bf3f",
        "--label", f"tritonops.logging={logging_digest(SPEC.log)}", "--restart", "unless-stopped", "--gpus", '"device=0,1"',
        "--ulimit", "memlock=-1", "--ulimit", "stack=67108864", "--ipc", "host",
        "--publish", "0.0.0.0:8000:8000", "--publish", "0.0.0.0:8001:8001", "--publish", "0.0.0.0:8002:8002",
        "--log-driver", "json-file", "--log-opt", "mode=non-blocking", "--log-opt", "max-buffer-size=4m",
        "--log-opt", "max-size=50m", "--log-opt", "max-file=5",
        "--log-opt", "labels=tritonops.deployment,tritonops.release",
        "--volume", f"{SPEC.release_dir}:{SPEC.release_dir}:ro",
        "--volume", f"{SPEC.weights_dirs[0]}:{SPEC.weights_dirs[0]}:ro",
        "sha256:" + "9" * 64, "tritonserver", f"--model-repository={SPEC.release_dir}/model_repository",
        "--log-format=ISO8601", "--exit-timeout-secs=30", "--strict-readiness=true")


def test_the_container_logger_runs_tritonserver_with_the_lines_fields_and_the_driver_ships():
    from dataclasses import replace
    from tritonops.logs.shipping import log_shipping
    logger = "/opt/tritonops/prod/bin/container_logger.py"
    spec = replace(SPEC, logger_path=logger, host_name="gpu-7", models=("chat", "embed"),
                   log=log_shipping("syslog", "tcp://logs.example:514", tag="tritonops/prod"))
    argv = run_argv(spec)
    image = argv.index(SPEC.image_id)
    assert argv[image - 2:image] == ("--volume", f"{logger}:{logger}:ro")
    assert argv[image + 1:image + 14] == ("python3", logger, "--host", "gpu-7", "--deployment", "prod", "--release",
                                          SPEC.release, "--models", "chat,embed", "--", "tritonserver",
                                          f"--model-repository={SPEC.release_dir}/model_repository")
    opts = [argv[i + 1] for i, a in enumerate(argv) if a == "--log-opt"]
    assert argv[argv.index("--log-driver") + 1] == "syslog"
    assert opts == ["mode=non-blocking", "max-buffer-size=4m", "labels=tritonops.deployment,tritonops.release",
                    "syslog-format=rfc5424micro", "tag=tritonops/prod", "syslog-address=tcp://logs.example:514"]


def test_the_logging_label_names_the_settings_asked_for_even_on_the_fallback():
    from dataclasses import replace
    from tritonops.logs.shipping import LOCAL_FALLBACK, log_shipping
    shipping = replace(SPEC, log=log_shipping("syslog", "tcp://c:514"))
    asked = f"tritonops.logging={logging_digest(shipping.log)}"
    assert asked in run_argv(shipping) and asked in run_argv(shipping, log=LOCAL_FALLBACK)
    assert logging_digest(shipping.log) != logging_digest(SPEC.log)


def test_ports_shm_and_the_admin_key_file_read_by_the_logger():
    from dataclasses import replace
    key = "/opt/tritonops/prod/admin.key"
    argv = run_argv(replace(SPEC, gpus=(3,), ports=Ports(9000, 9001, 9002, "127.0.0.1"), shm_size="16g",
                            admin_key_file=key, logger_path="/opt/tritonops/prod/bin/container_logger.py"))
    assert argv[argv.index("--gpus") + 1] == '"device=3"'
    assert "--ipc" not in argv and argv[argv.index("--shm-size") + 1] == "16g"
    assert "127.0.0.1:9000:8000" in argv and "127.0.0.1:9002:8002" in argv
    assert f"{key}:{key}:ro" in argv
    at = argv.index("--restricted-key-file")
    assert argv[at:at + 7] == ("--restricted-key-file", key, "--restricted-apis",
                               "model-repository,model-config,shared-memory,statistics,trace,logging",
                               "--restricted-header", "tritonops-admin-key", "--")
    assert not any("restricted-api=" in arg for arg in argv)  # the key itself is never on this line
    with pytest.raises(ValueError, match="container logger"):
        run_argv(replace(SPEC, admin_key_file=key))


@pytest.mark.parametrize("line, kind", [
    ("TypeError: AsyncEngineArgs.__init__() got an unexpected keyword argument 'disable_log_requests'",
     "unknown engine argument"),
    ("ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in "
     "KV cache (3664). Try increasing `gpu_memory_utilization`", "context larger than KV cache"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "out of memory"),
    ("ValueError: User-specified max_model_len (65536) is greater than the derived max_model_len "
     "(max_position_embeddings=32768 or model_max_length=None in model's config.json).",
     "context longer than the model allows"),
    ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
     "dtype unsupported by the GPU"),
    ("CUDA driver version is insufficient for CUDA runtime version", "driver too old"),
    ("Unable to find image 'tritonserver:vllm_env' locally", "image missing"),
    ("Error starting userland proxy: listen tcp4 0.0.0.0:8000: bind: address already in use", "port in use"),
])
def test_failures_are_classified_with_their_line(line, kind):
    log = f"2026-12-01T08:00:00Z I starting\n{line}\n2026-12-01T08:00:01Z E failed to load all models\n"
    assert classify(log) == Reason(kind, line)


def test_an_unknown_failure_is_none():
    assert classify("I0000 server is alive\nerror: something new\n") is None


def test_kv_cache_tokens_from_v1_and_v0_lines_the_last_one_wins():
    assert kv_cache_tokens("INFO ... GPU KV cache size: 1,234 tokens\nINFO GPU KV cache size: 5,678,912 tokens") \
        == 5678912
    assert kv_cache_tokens("INFO worker.py: # GPU blocks: 229, # CPU blocks: 2048") == 229 * 16
    assert kv_cache_tokens("INFO executor_base.py:113] # cuda blocks: 616947, # CPU blocks: 262144") == 616947 * 16
    assert kv_cache_tokens("nothing here") is None


def test_the_deadline_grows_with_the_weights():
    assert gate_deadline_s(0) == 120
    assert gate_deadline_s(140 * 1024 ** 3) == pytest.approx(120 + 14 * 60)
    assert gate_deadline_s(10 ** 15) == 3600


def test_triton_warnings_are_not_failures():
    log = ("2026-12-01T08:00:00Z W 1 pinned_memory_manager.cc:273] Unable to allocate pinned system memory, pinned "
           "memory pool will not be available: CUDA driver version is insufficient for CUDA runtime version\n"
           "W1201 08:00:00.000 1 server.cc:1] CUDA driver version is insufficient for CUDA runtime version\n"
           "E1201 08:00:01.000 1 model.py:1] TypeError: __init__() got an unexpected keyword argument 'x'\n")
    assert classify(log).kind == "unknown engine argument"
    assert classify(log.rsplit("E1201", 1)[0]) is None


def test_a_replica_has_a_container_of_its_own_labelled_with_it_on_exactly_its_gpus():
    from dataclasses import replace
    argv = run_argv(replace(SPEC, replica="chat-1", gpus=(2, 3), ports=Ports(8010, 8011, 8012)))
    assert argv[:5] == ("docker", "run", "--detach", "--name", "tritonops-prod-chat-1")
    assert argv[argv.index("--restart") - 2:argv.index("--restart")] == ("--label", "tritonops.replica=chat-1")
    assert argv[argv.index("--gpus") + 1] == '"device=2,3"'
    assert "0.0.0.0:8010:8000" in argv and "0.0.0.0:8012:8002" in argv


def test_an_ipv6_bind_address_is_published_in_docker_s_bracketed_form():
    from dataclasses import replace

    argv = run_argv(replace(SPEC, ports=Ports(8000, 8001, 8002, "fd00::15")))
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--publish"] == [
        "[fd00::15]:8000:8000", "[fd00::15]:8001:8001", "[fd00::15]:8002:8002"]
