"""A stand-in for the part of the Hugging Face Hub's HTTP API that `huggingface_hub` uses to fetch a
model, serving a tiny model made here. A lab fixture: it never ships outside the lab.

    from tritonops.lab.hub import HubServer, tiny_model
    with HubServer({"lab/tiny-llama": tiny_model()}, host=ADDRESS, token="hf_...") as hub:
        hub.endpoint  # -> HF_ENDPOINT for the hosts
"""

from tritonops.lab.hub.model import TINY_REPO, tiny_model
from tritonops.lab.hub.server import HubServer, Repo

__all__ = ["HubServer", "Repo", "TINY_REPO", "tiny_model"]
