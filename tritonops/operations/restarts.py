"""--diff for serve_release: per replica, whether its container would restart and why, field by field; for
rollback_release, what goes back. Pure: from what the host answered (its container, the serving release's
release.json and model.json files, its releases) and the new release."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from tritonops.planning.serve_record import ReplicaRecord, ServeRecord

MAX_FIELDS = 6  # changed keys named per file; more are counted


def restart_lines(replicas: Sequence[ReplicaRecord], deployment: str, containers: Mapping[int, Sequence[str]],
                  release: str, image_id: str, logging: str, new_files: Mapping[str, str],
                  current: Mapping[str, Any] | None, current_serve: ServeRecord | None,
                  current_texts: Mapping[str, str | None], weights: str | None = None) -> list[str]:
    """One line per replica. `containers`: each replica index's container words (release, running, image,
    restarts, logging digest: serving.rollout_facts.ContainerState.words), absent when it has no container;
    `current`: the serving release's release.json, None without one, and `current_serve` its serve record where it
    has one; `current_texts`: its model repository files by path, where read."""
    changes = _release_changes(new_files, current, current_texts)
    if current and weights and current.get("weights_digest") not in (None, weights):
        changes.append("the weights change (their manifests' digest)")
    placed = {r.index: r for r in (current_serve.replicas if current_serve is not None else ())}
    lines = []
    for replica in replicas:
        index = replica.index
        words = list(containers.get(index) or ())
        name = replica.container(deployment)
        why = _replica_reasons(replica, words, release, image_id, logging, changes, placed.get(index))
        if why:
            lines.append(f"replica {index} ({name}) restarts: " + "; ".join(why))
        else:
            lines.append(f"replica {index} ({name}) keeps running release {release}: nothing it runs changes")
    return lines


def _replica_reasons(replica: ReplicaRecord, words: list[str], release: str, image_id: str, logging: str,
                     changes: list[str], placed: ReplicaRecord | None) -> list[str]:
    if len(words) != 5:
        return ["no container yet"]
    reasons = []
    if words[1] != "true":
        reasons.append("its container is not running")
    if words[0] != release:
        reasons.append(f"release {words[0] or '(none)'} -> {release}" + (f" ({', '.join(changes)})" if changes else ""))
        if placed is not None:  # where the serving release placed this replica
            if placed.gpus != replica.gpus:
                reasons.append(f"gpus {list(placed.gpus)} -> {list(replica.gpus)}")
            if placed.ports != replica.ports:
                reasons.append(f"ports {list(placed.ports)} -> {list(replica.ports)}")
    if words[2] != image_id:
        reasons.append(f"image {_short(words[2])} -> {_short(image_id)}")
    if words[4] != logging:
        reasons.append("its log settings change (tritonops_log_*)")
    return reasons


def _release_changes(new_files: Mapping[str, str], current: Mapping[str, Any] | None,
                     current_texts: Mapping[str, str | None]) -> list[str]:
    """What differs between the serving release's model repository and the new one: each file that changes,
    with the keys that change in a JSON file (model.json: the engine arguments)."""
    if not current or not isinstance(current.get("files"), dict):
        return []
    before: dict = current["files"]
    changes = []
    for path in sorted(set(before) | set(new_files)):
        if path not in new_files:
            changes.append(f"{path} removed")
            continue
        if path not in before:
            changes.append(f"{path} added")
            continue
        if before[path] == hashlib.sha256(new_files[path].encode()).hexdigest():
            continue
        keys = _changed_keys(current_texts.get(path), new_files[path]) if path.endswith(".json") else None
        changes.append(f"{path}: {keys}" if keys else f"{path} changes")
    return changes


def _changed_keys(old_text: str | None, new_text: str) -> str | None:
    try:
        old, new = json.loads(old_text or ""), json.loads(new_text)
    except ValueError:
        return None
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None
    keys = [key for key in sorted(set(old) | set(new)) if old.get(key, _MISSING) != new.get(key, _MISSING)]
    shown = [f"{key} {_value(old, key)} -> {_value(new, key)}" for key in keys[:MAX_FIELDS]]
    more = f" and {len(keys) - MAX_FIELDS} more" if len(keys) > MAX_FIELDS else ""
    return ", ".join(shown) + more if shown else None


_MISSING = object()


def _value(data: dict, key: str) -> str:
    if key not in data:
        return "(unset)"
    text = json.dumps(data[key])
    return text if len(text) <= 40 else text[:37] + "..."


def _short(image_id: str) -> str:
    return image_id.removeprefix("sha256:")[:12] or "(none)"


def rollback_lines(current: Any, target: Any) -> list[str]:
    """What a rollback from `current` to `target` (serving.releases.ReleaseRecord; `current` None when nothing
    serves) changes, one line: the image, each model engine's max_num_seqs, the engine arguments, the replicas, the
    serving mode, the bind."""
    if current is None:
        return [f"back to release {target.id}: nothing serves now"]
    said = []
    if current.image_id != target.image_id:
        said.append(f"image {_short(current.image_id or '')} -> {_short(target.image_id or '')}")
    if current.max_num_seqs != target.max_num_seqs and current.max_num_seqs and target.max_num_seqs:
        said.append("max_num_seqs " + ", ".join(map(str, current.max_num_seqs)) + " -> "
                    + ", ".join(map(str, target.max_num_seqs)))
    if current.engine_args != target.engine_args:
        said.append(f"engine arguments (model.json) {current.engine_args or '(unknown)'} -> "
                    f"{target.engine_args or '(unknown)'}")
    before, after = _gpus(current), _gpus(target)
    if len(before) != len(after):
        said.append(f"replicas {len(before) or 1} -> {len(after) or 1}")
    elif before != after:
        said.append(f"replicas' GPUs {before} -> {after}")
    if current.mode.name != target.mode.name:
        said.append(f"frontend {current.mode.name} -> {target.mode.name}")
    if current.bind != target.bind:
        said.append(f"bind {current.bind} -> {target.bind}")
    what = "; ".join(said) if said else "the same image, engine arguments and replicas"
    return [f"back from release {current.id} to {target.id}: {what}"]


def _gpus(release: Any) -> list[list[int]]:
    """Each replica's GPUs, as a release records its placement."""
    return [list(r.gpus) for r in release.serve.replicas] if release.serve is not None else []

