#!/usr/bin/env python3
"""The model repository tritonops renders for a real H200, for the device proof (bench/real_gpu_serve.md).

For Qwen2.5-0.5B-Instruct and Qwen2.5-7B-Instruct (their config.json only: dummy weights), sized by
tritonops for one H200 from the probe captured on a real H200 (tests/fixtures/real/h200x2) and vLLM
0.25.0, rendered by tritonops (config.pbtxt with backend "vllm", model.json), then made runnable
without weights: model.json gets "load_format": "dummy", the model folder and a stand-in tokenizer
(made by ../shared/gpu-kit/make_tokenizer.py) as relative paths, and the backend resolves them
against the version folder. Prints each plan's predicted KV-cache tokens (the gate compares them with
vLLM's own line).

    python bench/real_gpu_repo.py OUT_DIR [--kit ../shared/gpu-kit]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tritonops.facts.model import report_from_json  # noqa: E402
from tritonops.render.model_repository import RepositoryModel, render_model_repository  # noqa: E402
from tritonops.sizing.chooser import size_engine  # noqa: E402
from tritonops.sizing.engine_plan import SizingRequest  # noqa: E402
from tritonops.sizing.gpu_spec import gpu_spec_from_facts  # noqa: E402
from tritonops.sizing.model_source import load_model_dir  # noqa: E402

MODELS = {"qwen05": "Qwen2.5-0.5B-Instruct", "qwen7b": "Qwen2.5-7B-Instruct"}
VLLM = "0.25.0"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--kit", default=str(REPO.parent / "shared" / "gpu-kit"))
    args = parser.parse_args()
    facts = report_from_json(json.loads(
        (REPO / "tests/fixtures/real/h200x2/probe-local-idle.json").read_text())).hosts[0].facts
    gpus = gpu_spec_from_facts(facts)
    gpus = replace(gpus, count=1)  # the lent machine has one H200
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(out.parent / (out.name + "-plans"), ignore_errors=True)
    for name, model in MODELS.items():
        source = REPO / "tests/fixtures/models" / model
        plan = size_engine(load_model_dir(source), gpus, SizingRequest(model_ref="hf-config", vllm_version=VLLM))
        assert plan.fits, plan.problems
        # stats stay as rendered (vLLM's default: on), so the backend's KV-cache gauge is the one users get
        model_json = {**plan.model_json, "model": "hf-config", "tokenizer": "tokenizer", "load_format": "dummy",
                      "seed": 0}
        repository = out / name  # one repository per model: each engine gets the GPU to itself
        for path, text in render_model_repository([RepositoryModel(name, 1, model_json)]).items():
            (repository / path).parent.mkdir(parents=True, exist_ok=True)
            (repository / path).write_text(text)
        version = repository / name / "1"
        (version / "hf-config").mkdir()
        shutil.copy(source / "config.json", version / "hf-config" / "config.json")
        subprocess.run([sys.executable, str(Path(args.kit) / "make_tokenizer.py"), str(source / "config.json"),
                        str(version / "tokenizer")], check=True, capture_output=True)
        print(f"{name}: {model} TP {plan.tensor_parallel_size} max_model_len {plan.max_model_len} {plan.dtype} "
              f"gpu_memory_utilization {plan.gpu_memory_utilization}: predicted KV cache {plan.kv_cache_tokens:,} tokens")
        plans = out.parent / (out.name + "-plans")
        plans.mkdir(exist_ok=True)
        (plans / f"{name}.json").write_text(json.dumps(plan.to_dict(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
