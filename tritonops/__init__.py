"""tritonops: a Triton Inference Server + vLLM fleet from bare-metal GPU hosts."""

__version__ = "0.1.0"
