"""
agent_rollout: the trainer-side client of the agent-rollout service.

Start a batch, follow it, take GRPO groups as they finish, read token-exact trajectories as Arrow
tables, and convert them to verl's fields or a plain per-token numpy layout::

    client = await RolloutClient.connect("127.0.0.1:7233", api_url="http://127.0.0.1:8400")
    batch_id = await client.start_batch(["py-slugify-1"], n=8)
    async for group in client.iter_groups(batch_id):
        if group.file:
            batch = to_verl(group.read_table())
"""

from .arrow import TRAJECTORY_SCHEMA, read_file, read_files, read_table
from .client import BATCH_WORKFLOW, DEFAULT_TASK_QUEUE, FinishedGroup, RolloutClient, manifest_groups
from .convert import TokenArrays, as_torch, logprobs_by_trajectory, to_token_arrays, to_verl
from .errors import ApiError, ApiNotConfiguredError, ConversionError, FileCheckError, IncompleteGroupError, NoGroupDataError, RolloutError
from .http import HttpApi
from .sync import SyncRolloutClient
from .types import FileRef, Manifest, ManifestGroup, Progress

__all__ = [
    "BATCH_WORKFLOW",
    "DEFAULT_TASK_QUEUE",
    "TRAJECTORY_SCHEMA",
    "ApiError",
    "ApiNotConfiguredError",
    "ConversionError",
    "FileCheckError",
    "FileRef",
    "FinishedGroup",
    "HttpApi",
    "IncompleteGroupError",
    "Manifest",
    "ManifestGroup",
    "NoGroupDataError",
    "Progress",
    "RolloutClient",
    "RolloutError",
    "SyncRolloutClient",
    "TokenArrays",
    "as_torch",
    "logprobs_by_trajectory",
    "manifest_groups",
    "read_file",
    "read_files",
    "read_table",
    "to_token_arrays",
    "to_verl",
]
