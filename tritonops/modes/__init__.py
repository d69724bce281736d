"""Serving modes: how a replica is started, checked and called. One module per mode (`kserve`: Triton's own
server and its KServe v2 API; more to come), each a `ServingMode` (base.py) that says the container's command
line, its ports, the readiness and health requests, the gate's generate requests, the metrics page and the
path a balancer checks. The serve steps, status, the lab's request helper and the balancer ask the mode
(choice.py finds it by name); nothing else knows which one runs. Pure: no I/O.
"""
