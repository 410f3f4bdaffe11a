"""The batch workflow's single JSON argument (``BatchRequest``), built from Python keyword options."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

_SNAKE = re.compile(r"_([a-z0-9])")


def camel_case(name: str) -> str:
    """``max_staleness`` -> ``maxStaleness``; names already in camelCase are returned unchanged."""
    return _SNAKE.sub(lambda m: m.group(1).upper(), name)


def _camel_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {camel_case(str(k)): _camel_keys(v) for k, v in value.items()}
    return value


def new_batch_id() -> str:
    """A fresh batch id, ``batch-`` and 12 hex digits."""
    return f"batch-{uuid.uuid4().hex[:12]}"


def batch_request(task_ids: Sequence[str], n: int, batch_id: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """
    The ``BatchRequest`` object: ``taskIds``, ``n`` and ``batchId`` plus every option with its key
    (and nested keys, e.g. inside ``limits``) turned to camelCase. Options left out take the
    workflow's defaults.
    """
    if isinstance(task_ids, str):
        raise TypeError("task_ids must be a sequence of task ids, not one string")
    if not task_ids:
        raise ValueError("task_ids must not be empty")
    if n < 1:
        raise ValueError("n must be a positive integer")
    request: dict[str, Any] = {camel_case(k): _camel_keys(v) for k, v in options.items() if v is not None}
    request.update({"batchId": batch_id, "taskIds": list(task_ids), "n": int(n)})
    return request
