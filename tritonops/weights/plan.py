"""From a source and what is on the host to the transfer steps still needed (pure).

    verified final folder for this source   -> nothing (no byte moves, no hub is asked)
    final folder with bad or missing files  -> reopen it as the staging folder, discard bad files, fetch
    staging folder from an interrupted run  -> keep complete files, resume '<name>.part' from its size
    controller folder larger than free disk -> refused before any byte moves, naming the numbers
    host path                               -> checked (config.json, index, shards, sizes); linked
A hub fetch learns the files only on the host, so the hub program checks the disk there itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tritonops.errors import TritonopsError
from tritonops.weights.facts import FinalFact, HostPathFact, Layout, WeightsFact
from tritonops.weights_source.manifest import Manifest
from tritonops.weights_source.source import Source
from tritonops.weights.transfer import (Discard, Finalize, HubFetch, LinkHostPath, PushFiles, PushItem, RemovePath,
                                        Reopen, Runner, TransferStep)
from tritonops.weights.token import Secret

PART = ".part"
INDEX = "model.safetensors.index.json"


class WeightsRefused(TritonopsError):
    """Refused before anything moved (not enough disk, a host path that does not hold a model)."""


@dataclass(frozen=True)
class WeightsPlan:
    steps: tuple[TransferStep, ...]
    reason: str  # why these steps (or why none)
    bytes_to_move: int | None = None  # known for a controller folder; a hub fetch learns it on the host
    notes: tuple[str, ...] = field(default=())


def verified(final: FinalFact, source: Source, manifest: Manifest | None = None) -> list[str]:
    """What is wrong with the final folder for this source ([] when it is verified)."""
    if final.kind != "dir":
        return [f"no folder at the final path ({final.kind})"]
    if final.manifest is None:
        return [f"no manifest ({final.manifest_error})" if final.manifest_error else "no manifest"]
    problems = []
    if manifest is not None:  # a controller folder: the content decides, not where it came from
        if final.manifest.by_path() != manifest.by_path():
            problems.append("its manifest lists other files")
    else:
        recorded = {k: v for k, v in final.manifest.source.items() if k != "commit"}
        if recorded != source.identity():
            problems.append("its manifest is for another source")
    problems += bad_files(final)
    return problems


def bad_files(final: FinalFact) -> list[str]:
    out = []
    for entry in final.manifest.files if final.manifest else ():
        size, sha = final.files.get(entry.path, (None, None))
        if size is None:
            out.append(f"{entry.path}: missing")
        elif size != entry.size:
            out.append(f"{entry.path}: {size} bytes, expected {entry.size}")
        elif sha != entry.sha256:
            out.append(f"{entry.path}: sha256 differs")
    return out


def _restage(layout: Layout, fact: WeightsFact) -> tuple[list[TransferStep], dict[str, int]]:
    """Steps that leave a staging folder to work in, and its files (rel -> size) once they ran."""
    final = fact.final
    if final.kind == "dir" and final.manifest is not None and not fact.staging_exists:
        bad = tuple(e.path for e in final.manifest.files if final.files.get(e.path, (None, None))[1] != e.sha256)
        good = {e.path: e.size for e in final.manifest.files if e.path not in bad}
        return [Reopen(layout.final, layout.staging)] + ([Discard(layout.staging, bad)] if bad else []), good
    steps = [RemovePath(layout.final)] if final.kind != "missing" else []
    return steps, dict(fact.staging_files)


def plan_hub(source: Source, layout: Layout, fact: WeightsFact, *, runner: Runner, token: Secret | None = None,
             token_env: str | None = None, token_file: str | None = None,
             endpoint: str | None = None) -> WeightsPlan:
    problems = verified(fact.final, source)
    if not problems:
        return WeightsPlan((), f"{layout.model_id} is present and verified", 0)
    steps, _ = _restage(layout, fact)
    steps.append(HubFetch(source, layout.staging, layout.final, runner, token, token_env, token_file, endpoint))
    return WeightsPlan(tuple(steps), "; ".join(problems[:5]))


def plan_push(source: Source, layout: Layout, fact: WeightsFact, local: Manifest,
              local_paths: dict[str, str]) -> WeightsPlan:
    problems = verified(fact.final, source, local)
    if not problems:
        return WeightsPlan((), f"{layout.model_id} is present and verified", 0)
    steps, staged = _restage(layout, fact)
    items, discard, need = [], [], 0
    for entry in local.files:
        size = staged.get(entry.path)
        if size == entry.size:
            continue  # complete: finalize hashes it
        if size is not None:
            discard.append(entry.path)
        offset = staged.get(entry.path + PART, 0)
        if offset > entry.size:
            discard.append(entry.path + PART)
            offset = 0
        items.append(PushItem(entry.path, local_paths[entry.path], entry.size, offset))
        need += entry.size - offset
    if need > fact.free_bytes:
        raise WeightsRefused(f"not enough disk for {layout.model_id}: {need:,} bytes to copy, "
                             f"{fact.free_bytes:,} free at {fact.free_path}; nothing was copied")
    if discard:
        steps.append(Discard(layout.staging, tuple(discard)))
    if items:
        steps.append(PushFiles(layout.staging, tuple(items)))
    steps.append(Finalize(layout.staging, layout.final, local))
    return WeightsPlan(tuple(steps), "; ".join(problems[:5]), need)


def plan_host_path(source: Source, layout: Layout, fact: WeightsFact) -> WeightsPlan:
    problems = host_path_problems(source.path, fact.host_path)
    if problems:
        raise WeightsRefused(f"{source.path} does not hold a usable model: " + "; ".join(problems[:5]))
    if fact.final.kind == "link" and fact.final.link_target == source.path:
        return WeightsPlan((), f"{layout.model_id} links to {source.path}, which checks out", 0)
    steps: list[TransferStep] = [RemovePath(layout.final)] if fact.final.kind not in ("missing", "link") else []
    steps.append(LinkHostPath(layout.final, source.path))
    return WeightsPlan(tuple(steps), f"link {layout.model_id} to {source.path}", 0)


def host_path_problems(path: str, fact: HostPathFact | None) -> list[str]:
    """config.json and the safetensors index agree with the files: every shard the index names
    exists, every shard's header fits in it, and the shards hold what the index's total_size says."""
    if fact is None or fact.kind != "dir":
        return [f"{path} is not a folder"]
    problems = []
    try:
        config = json.loads(fact.texts["config.json"])
        if not isinstance(config, dict):
            raise ValueError
    except KeyError:
        problems.append("config.json is missing")
    except ValueError:
        problems.append("config.json is not a JSON object")
    shards = sorted(f for f in fact.files if f.endswith(".safetensors"))
    total_size = None
    if INDEX in fact.files:
        try:
            index = json.loads(fact.texts.get(INDEX, ""))
            weight_map = index["weight_map"]
            named = sorted(set(weight_map.values()))
            total_size = (index.get("metadata") or {}).get("total_size")
        except (ValueError, KeyError, TypeError, AttributeError):
            return problems + [f"{INDEX} is not a safetensors index (no weight_map)"]
        missing = [s for s in named if s not in fact.files]
        if missing:
            problems.append(f"{INDEX} names {', '.join(missing[:3])}{' and more' if len(missing) > 3 else ''}, "
                            f"not in {path}")
        shards = [s for s in named if s in fact.files]
    elif not shards:
        problems.append("no *.safetensors weights")
    data = 0
    for shard in shards:
        size, header = fact.files[shard], fact.headers.get(shard)
        if header is None or 8 + header > size:
            problems.append(f"{shard} is too small for its header ({size:,} bytes): truncated?")
        else:
            data += size - 8 - header
    if isinstance(total_size, int) and not problems and not (total_size <= data <= total_size * 1.01 + (1 << 20)):
        problems.append(f"the shards hold {data:,} bytes of tensors, the index says total_size {total_size:,}")
    return problems
