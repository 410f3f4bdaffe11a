"""Reading trajectory files (Arrow IPC streams) named by the manifest."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import pyarrow as pa

from .errors import FileCheckError, IncompleteGroupError
from .sources import open_uri
from .types import FileRef, Manifest


def _item(value_type: pa.DataType) -> pa.DataType:
    """A list column whose items are never null, as the service writes them."""
    return pa.list_(pa.field("item", value_type, nullable=False))


def _nullable_item(value_type: pa.DataType) -> pa.DataType:
    """A per-turn list column whose items are null for turns recorded before the value was kept."""
    return pa.list_(pa.field("item", value_type, nullable=True))


#: Columns and Arrow types of one trajectory row, as shared/specs/trajectory.md fixes them.
#: Files may carry extra columns beyond these.
TRAJECTORY_SCHEMA = pa.schema(
    [
        ("trajectory_id", pa.utf8()),
        ("group_id", pa.utf8()),
        ("task_id", pa.utf8()),
        ("episode_id", pa.utf8()),
        ("batch_id", pa.utf8()),
        ("episode_index", pa.int32()),
        ("chain_index", pa.int32()),
        ("num_chains", pa.int32()),
        ("is_final_chain", pa.bool_()),
        ("parent_chain_index", pa.int32()),
        ("fork_offset", pa.int32()),
        ("agent_name", pa.utf8()),
        ("input_ids", _item(pa.int32())),
        ("prompt_length", pa.int32()),
        ("loss_mask", _item(pa.uint8())),
        ("sampled_mask", _item(pa.uint8())),
        ("logprobs", _item(pa.float32())),
        ("token_version", _item(pa.int32())),
        ("min_version", pa.int32()),
        ("max_version", pa.int32()),
        ("turn_starts", _item(pa.int32())),
        ("turn_finish_reason", _item(pa.utf8())),
        ("turn_cached_tokens", _item(pa.int32())),
        ("turn_temperature", _nullable_item(pa.float64())),
        ("turn_logprobs_mode", _nullable_item(pa.utf8())),
        ("reward", pa.float32()),
        ("reward_info", pa.utf8()),
        ("finished", pa.bool_()),
        ("truncated", pa.bool_()),
        ("termination_reason", pa.utf8()),
        ("num_turns", pa.int32()),
        ("num_tool_calls", pa.int32()),
        ("num_rollbacks", pa.int32()),
        ("t_episode_s", pa.float32()),
        ("t_llm_s", pa.float32()),
        ("t_env_s", pa.float32()),
        ("messages", pa.large_utf8()),
    ]
)


def _sha256(source: pa.NativeFile) -> str:
    """Hex sha256 of the whole file; leaves it at the start again."""
    digest = hashlib.sha256()
    while block := source.read_buffer(1 << 20):
        digest.update(block)
    source.seek(0)
    return digest.hexdigest()


def read_file(ref: FileRef, verify: bool = True) -> pa.Table:
    """
    Reads one manifest file into a table. A local path or ``file://`` URI is memory-mapped, so
    token lists are not copied; ``s3://`` and ``http(s)://`` URIs are fetched as
    :mod:`agent_rollout.sources` says (endpoint, credentials and token from the environment).

    ``verify`` (default True) checks the file's sha256 and row count against the manifest first, so
    a truncated or replaced file is an error, never silently different training data.
    """
    uri = ref["uri"]
    with open_uri(uri) as source:
        if verify and _sha256(source) != ref["sha256"]:
            raise FileCheckError(f"sha256 of {uri} differs from the manifest")
        table = pa.ipc.open_stream(source).read_all()
    if verify and table.num_rows != ref["rows"]:
        raise FileCheckError(f"{uri} has {table.num_rows} rows, the manifest says {ref['rows']}")
    return table


def group_ids(ref: FileRef) -> set[str]:
    """The groups a file holds rows of; a local file is memory-mapped, so only its ``group_id`` column is touched."""
    with open_uri(ref["uri"]) as source:
        return {gid for batch in pa.ipc.open_stream(source) for gid in batch.column("group_id").unique().to_pylist()}


def read_files(refs: Iterable[FileRef], verify: bool = True) -> pa.Table:
    """All rows of several files in one table; an empty table with :data:`TRAJECTORY_SCHEMA` when there are none."""
    tables = [read_file(ref, verify) for ref in refs]
    if not tables:
        return TRAJECTORY_SCHEMA.empty_table()
    return pa.concat_tables(tables, promote_options="default")


def read_table(manifest: Manifest, verify: bool = True) -> pa.Table:
    """
    Every trajectory row of a finished batch: the rows of all files its manifest lists. A group
    reported ``export_failed`` raises :class:`IncompleteGroupError`: rows are missing.
    """
    for group in manifest["groups"]:
        if group["status"] == "export_failed":
            raise IncompleteGroupError(group["group_id"], list(group.get("missing_episode_ids", [])))
    return read_files(manifest["files"], verify)
