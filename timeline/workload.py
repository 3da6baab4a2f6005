"""What a run measured, in words: the key configuration that makes two runs comparable."""

from __future__ import annotations

from typing import Any


def _short_model(path: Any) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    return path.rstrip("/").rsplit("/", 1)[-1]


def workload_label(config: dict[str, Any], machine: str | None = None) -> str:
    """A readable label such as ``Qwen3-235B tp8 EAGLE3/2/1/3 fp8``, after ``gpu-a: `` when the
    run's ``machine`` is named (a timeline of several machines: timeline.history).

    Speculative settings read as algorithm/steps/topk/draft-tokens; parallelism sizes of 1
    and default dtypes are left out.
    """
    parts: list[str] = [f"{machine}:"] if machine else []
    model = _short_model(config.get("served_model_name")) or _short_model(config.get("model_path"))
    if model:
        parts.append(model)
    for key, tag in (("tp_size", "tp"), ("dp_size", "dp"), ("ep_size", "ep"), ("pp_size", "pp")):
        value = config.get(key)
        if isinstance(value, int) and value > 1:
            parts.append(f"{tag}{value}")
    algorithm = config.get("speculative_algorithm")
    if algorithm:
        knobs = [
            config.get(k) for k in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
        ]
        parts.append("/".join([str(algorithm)] + ["-" if k is None else str(k) for k in knobs]))
    for key, prefix in (("quantization", ""), ("dtype", "dtype="), ("kv_cache_dtype", "kv=")):
        value = config.get(key)
        if value not in (None, "auto", ""):
            parts.append(f"{prefix}{value}")
    return " ".join(parts)
