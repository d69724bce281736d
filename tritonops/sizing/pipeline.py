"""Pipeline parallel: which decoder layers each stage holds, as vLLM splits them.

vLLM (distributed/utils.py get_pp_indices, without VLLM_PP_LAYER_PARTITION) gives every stage
layers // pp and hands the remainder, one layer each, to the stages just before the last (the last
stage also holds the LM head and the sampler): 5 layers over 3 stages are [2, 2, 1]. The first stage
holds the token embedding, the last the final norm and the LM head (its own copy even when the
checkpoint ties them: the embedding lives on another host). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

# hosts one pipeline may span: vLLM sets no limit; past this a split of the model is surely a mistake
MAX_PIPELINE_HOSTS = 16


@dataclass(frozen=True)
class PipelineStage:
    index: int          # pipeline rank, 0 = the head's stage
    count: int          # pipeline_parallel_size
    first_layer: int
    layers: int

    @property
    def first(self) -> bool:
        return self.index == 0

    @property
    def last(self) -> bool:
        return self.index == self.count - 1

    @property
    def layer_range(self) -> str:
        return f"{self.first_layer}-{self.first_layer + self.layers - 1}"


def layer_split(num_hidden_layers: int, pipeline_parallel_size: int) -> tuple[int, ...]:
    """Layers per stage, in stage order."""
    if pipeline_parallel_size < 1 or num_hidden_layers < pipeline_parallel_size:
        raise ValueError(f"{num_hidden_layers} layers cannot be split over {pipeline_parallel_size} stages")
    parts = [num_hidden_layers // pipeline_parallel_size] * pipeline_parallel_size
    for i in range(2, num_hidden_layers % pipeline_parallel_size + 2):
        parts[-i] += 1
    return tuple(parts)


def pipeline_stages(num_hidden_layers: int, pipeline_parallel_size: int) -> tuple[PipelineStage, ...]:
    stages, start = [], 0
    for index, layers in enumerate(layer_split(num_hidden_layers, pipeline_parallel_size)):
        stages.append(PipelineStage(index, pipeline_parallel_size, start, layers))
        start += layers
    return tuple(stages)


def whole_model(num_hidden_layers: int) -> PipelineStage:
    """No pipeline: one stage holding everything."""
    return PipelineStage(0, 1, 0, num_hidden_layers)
