"""Shapes of what the batch workflow returns (see shared/specs/trajectory.md and the issue-6 contract)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict


class Progress(TypedDict):
    """Answer of the batch workflow's ``progress`` query."""

    batchId: str
    total: int
    started: int
    running: int
    done: int
    ok: int
    infraErrors: int
    meanReward: float | None
    #: Episodes not started yet: ``total == done + running + queued``.
    queued: NotRequired[int]
    #: When the batch's first run started (workflow time, ms since the epoch).
    startedAtMs: NotRequired[int]
    groupsFinished: NotRequired[int]
    stale: NotRequired[int]


class FileRef(TypedDict):
    """One trajectory file: an Arrow IPC stream."""

    uri: str
    format: Literal["arrow-stream"]
    rows: int
    sha256: str


class Failure(TypedDict):
    episode_index: int
    reason: str


class ManifestGroup(TypedDict):
    """A GRPO group in the manifest: all samples of one task in one batch."""

    group_id: str
    task_id: str
    n_requested: int
    n_ok: int
    status: Literal["finished", "failure", "filtered", "export_failed"]
    rewards: list[float | None]
    failures: list[Failure]
    #: Only for ``export_failed``: the ok episodes whose rows could not be exported.
    missing_episode_ids: NotRequired[list[str]]


class ManifestStats(TypedDict):
    episodes: int
    chains: int
    tokens: int
    wall_s: float
    stale: int
    #: Groups reported ``export_failed``.
    export_failed: NotRequired[int]


class Manifest(TypedDict):
    """The batch workflow's result: small JSON that points at the Arrow files."""

    schema: str
    batch_id: str
    status: Literal["complete", "partial", "cancelled"]
    groups: list[ManifestGroup]
    files: list[FileRef]
    #: Set for a manifest too large for a workflow result: the whole manifest (JSON) is at this
    #: URI, and ``groups`` and ``files`` are empty. :meth:`RolloutClient.result` follows it.
    manifest_uri: NotRequired[str]
    stats: ManifestStats


class GroupsPage(TypedDict):
    """Answer of the ``finishedGroups`` update."""

    groups: list[dict]
    next: int
    done: bool
