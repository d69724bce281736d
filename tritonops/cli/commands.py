"""The commands of `tritonops` and what `tritonops --help` says of each: read by cli/main.py, which
lists them without importing their modules, and by each `cmd_<name>.py`, whose parser says the same."""

COMMANDS = {
    "inventory": "show the inventory: hosts, groups, variables, connections",
    "probe": "read GPUs and host facts over SSH",
    "size": "choose vLLM engine settings for a model and GPUs",
    "plan": "the engine plan per inventory host",
    "image": "build and distribute the Triton + vLLM image (vllm_env)",
    "deploy": "deploy Triton + vLLM: a verified release on every host",
    "rollback": "back to the previous (or a named) release on each host",
    "playbook": "run a playbook of one's own (your roles: copy, template, file, command, debug), as ansible-playbook",
    "releases": "every release kept on each host: who, when, image, engine args, gate; current and previous",
    "prune": "remove old release folders and vllm_env images no kept release names (never current or previous)",
    "lock": "each host's deployment lock: who holds it and since when; release it with --force OWNER",
    "status": "what each host serves: release, container, health, KV cache, metrics",
    "metrics": "per host and model: requests, average times, KV cache (from :8002)",
    "logs": "the Triton container's logs of each host, through SSH",
    "stop": "stop the current release's replicas for maintenance (drained first behind balancers)",
    "start": "start the stopped replicas again, each ready before the balancers send to it",
    "door": "the front door's API keys on the balancers: rotate-key, retire-keys",
    "bench": "load-test the deployed fleet with aiperf: TTFT, ITL, tokens/s per concurrency",
    "lab": "the local lab of simulated GPU hosts",
}
