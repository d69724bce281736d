"""The health gate's reading of a failed start: Triton's and vLLM's log lines -> one typed reason.
Pure, tested on logs captured from real servers (tests/fixtures/real/) and the lab.

Also: vLLM's own KV-cache capacity line, and how long a start may take for what it loads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tritonops.units import GIB


@dataclass(frozen=True)
class Reason:
    kind: str      # one of KINDS
    detail: str    # the log line (or its essential part) that says so

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


# (kind, pattern) in the order they are tried: the first match names the failure
_RULES: tuple[tuple[str, re.Pattern], ...] = (
    ("unknown engine argument", re.compile(r"unexpected keyword argument '([^']+)'")),
    ("context larger than KV cache", re.compile(
        r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache "
        r"\((\d+)\)|max_model_len \((\d+)\) is larger than|estimated maximum model length is (\d+)", re.I)),
    ("context longer than the model allows", re.compile(
        r"User-specified max_model_len \((\d+)\) is greater than the derived max_model_len", re.I)),
    ("out of memory", re.compile(r"CUDA out of memory|torch\.OutOfMemoryError|OutOfMemoryError|"
                                 r"No available memory for the cache blocks|insufficient memory", re.I)),
    ("dtype unsupported by the GPU", re.compile(r"Bfloat16 is only supported on GPUs with compute capability|"
                                                r"bfloat16 is not supported", re.I)),
    ("driver too old", re.compile(r"CUDA driver version is insufficient|driver/library version mismatch|"
                                  r"NVIDIA driver on your system is too old", re.I)),
    ("image missing", re.compile(r"No such image|Unable to find image|pull access denied", re.I)),
    ("port in use", re.compile(r"address already in use|port is already allocated|bind: address", re.I)),
    ("GPU not available", re.compile(r"could not select device driver|unknown device|no CUDA-capable device", re.I)),
)
KINDS = tuple(kind for kind, _ in _RULES)
# vLLM's own count of its KV cache: V1 "GPU KV cache size: N tokens", V0 "# GPU blocks: N" (until 0.6) or
# "# cuda blocks: N" (later V0), times the block size.
# operations/serve_rollout.py reads vLLM's KV-cache line with the same patterns from the gate's log lines.
KV_PATTERNS = (r"GPU KV cache size: ([\d,]+) tokens", r"# (?:GPU|cuda) blocks: (\d+)")
_KV_TOKENS = (re.compile(KV_PATTERNS[0]),)
_GPU_BLOCKS = re.compile(KV_PATTERNS[1])


_NOT_AN_ERROR = re.compile(r"^(\S+Z [IW] |[IW]\d{4} )")  # Triton's info and warning lines (ISO8601, default)


def classify(log: str) -> Reason | None:
    """The first known failure the log shows, with its line; None when none is recognised. Triton's
    info and warning lines are not read: a server on a host without a GPU warns "CUDA driver version is
    insufficient" for pinned memory and goes on."""
    relevant = "\n".join(line for line in log.splitlines() if not _NOT_AN_ERROR.match(line.strip()))
    for kind, pattern in _RULES:
        match = pattern.search(relevant)
        if match:
            return Reason(kind, _line_of(relevant, match.start()))
    return None


def kv_cache_tokens(log: str, block_size: int = 16) -> int | None:
    """vLLM's own count of the tokens its KV cache holds: V1 prints `GPU KV cache size: N tokens`,
    V0 `# GPU blocks: N` (times the block size). The last one printed wins (a restart prints anew)."""
    found = None
    for pattern in _KV_TOKENS:
        for match in pattern.finditer(log):
            found = int(match.group(1).replace(",", ""))
    if found is None:
        blocks = _GPU_BLOCKS.findall(log)
        if blocks:
            found = int(blocks[-1]) * block_size
    return found


def gate_deadline_s(weights_bytes: int, *, base_s: float = 120.0, gib_per_minute: float = 10.0,
                    cap_s: float = 3600.0) -> float:
    """How long a start may take: a base for Triton, vLLM's profiling and CUDA graphs, plus the weights at
    a pessimistic disk read rate (a 70B model in bf16, ~140 GB, gets about 16 minutes)."""
    return min(cap_s, base_s + weights_bytes / GIB / gib_per_minute * 60.0)


def _line_of(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    line = text[start:end if end != -1 else len(text)].strip()
    return line if len(line) <= 300 else line[:297] + "..."


KV_TOLERANCE = 0.03  # the sizing's worst-case goal on the real H200 runs (bench/sizing_accuracy.py: 3 %)


def kv_shortfall(predicted: int | None, reported: int | None) -> float | None:
    """How far vLLM's own KV-cache size falls below the plan's, as a fraction of the plan, when it falls
    further than the sizing's tolerance (the plan then promised concurrency the engine does not have);
    None otherwise, or when either is unknown."""
    if not predicted or reported is None or reported >= predicted * (1 - KV_TOLERANCE):
        return None
    return (predicted - reported) / predicted


def kv_warning(predicted: int, reported: int, shortfall: float) -> str:
    return (f"KV cache below the plan: vLLM has {reported:,} tokens, the plan {predicted:,} ({shortfall:.1%} "
            f"short, more than the sizing's {KV_TOLERANCE:.0%}): fewer concurrent tokens than planned")
