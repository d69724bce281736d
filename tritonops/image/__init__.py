"""The Triton + vLLM image: `official` (NGC's vllm-python image, pulled) or `committed`
(`tritonserver:vllm_env`: a base image plus `pip install vllm==<pin>`, built once, streamed to
every host that lacks its exact ID).

Pure: `ngc`, `spec`, `settings`, `build_script`, `preflight`, `plan`, `ids`. Talking to engines:
`docker_ssh` (the docker SDK through the host's SSH session), `engine`, `build`, `distribute`;
`api` ties them together and returns results as data for the CLI.
"""
