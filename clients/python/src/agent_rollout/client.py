"""The trainer's handle on agent-rollout: batches over Temporal, policy control over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import CancelledError, WorkflowAlreadyStartedError
from temporalio.service import RPCError

from . import arrow
from .errors import ApiNotConfiguredError, FileCheckError, IncompleteGroupError, NoGroupDataError
from .http import HttpApi, PauseMode
from .request import batch_request, new_batch_id
from .sources import open_uri
from .types import Failure, FileRef, Manifest, Progress

#: Workflow type of a batch, started by name.
BATCH_WORKFLOW = "batchWorkflow"
#: Task queue the service's workers poll by default (config ``temporal.taskQueue``).
DEFAULT_TASK_QUEUE = "agent-rollout"
#: Tries of one ``finishedGroups`` call on a running batch before its error is raised.
_UPDATE_ATTEMPTS = 3


@dataclass(frozen=True)
class FinishedGroup:
    """A GRPO group handed over as soon as all its episodes ended (the ``finishedGroups`` update)."""

    group_id: str
    task_id: str
    n_requested: int
    n_ok: int
    #: ``finished`` (has data), ``filtered`` (all rewards equal), ``failure`` (no episode succeeded) or
    #: ``export_failed`` (its rows could not be written whole; reading it raises IncompleteGroupError).
    status: str
    rewards: list[float | None]
    failures: list[Failure]
    #: The group's own Arrow file; None for filtered and failed groups.
    file: FileRef | None
    #: The object as the workflow sent it, including keys this client does not know.
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> FinishedGroup:
        return cls(
            group_id=obj["group_id"],
            task_id=obj["task_id"],
            n_requested=obj["n_requested"],
            n_ok=obj["n_ok"],
            status=obj["status"],
            rewards=list(obj["rewards"]),
            failures=list(obj["failures"]),
            file=obj.get("file"),
            raw=dict(obj),
        )

    def read_table(self, verify: bool = True) -> pa.Table:
        """The group's trajectory rows (one per chain); ``verify`` (default True) checks sha256 and rows."""
        if self.status == "export_failed":
            raise IncompleteGroupError(self.group_id, list(self.raw.get("missing_episode_ids", [])))
        if self.file is None:
            raise NoGroupDataError(f"group {self.group_id} has status {self.status} and no file")
        table = arrow.read_file(self.file, verify)
        mine = pc.equal(table.column("group_id"), self.group_id)
        # A file shared by several groups (a whole-batch file) holds other groups' rows too.
        rows = table if pc.all(mine).as_py() else table.filter(mine)
        episodes = len(pc.unique(rows.column("episode_id")))
        if verify and episodes != self.n_ok:
            raise FileCheckError(f"group {self.group_id}: {self.file['uri']} holds rows of {episodes} episodes, the group has {self.n_ok} ok")
        return rows


def _check_whole(group: FinishedGroup, after: int) -> None:
    """Raises for a group whose rows are not whole; ``after`` is the cursor past it."""
    if group.status == "export_failed":
        raise IncompleteGroupError(group.group_id, list(group.raw.get("missing_episode_ids", [])), after)


def manifest_groups(manifest: Manifest) -> list[FinishedGroup]:
    """
    The manifest's groups, each with its file: the group's ``file`` key when the manifest carries
    one, else the listed file that holds the group's rows.
    """
    by_group: dict[str, FileRef] = {}
    if any(g["status"] == "finished" and "file" not in g for g in manifest["groups"]):
        for ref in manifest["files"]:
            for gid in arrow.group_ids(ref):
                by_group.setdefault(gid, ref)
    return [
        FinishedGroup.from_json({"file": by_group.get(g["group_id"]) if g["status"] == "finished" else None, **g})
        for g in manifest["groups"]
    ]


class RolloutClient:
    """
    Starts and follows batches through Temporal (the batch workflow by name, its ``progress``
    query and ``finishedGroups`` update, its manifest) and reads their Arrow files with pyarrow.
    Policy control and log-prob consistency go to the HTTP API at ``api_url``.
    """

    def __init__(self, client: Client, task_queue: str = DEFAULT_TASK_QUEUE, api: HttpApi | None = None) -> None:
        self.temporal = client
        self.task_queue = task_queue
        self._api = api

    @classmethod
    async def connect(
        cls,
        temporal_address: str,
        namespace: str = "default",
        task_queue: str = DEFAULT_TASK_QUEUE,
        api_url: str | None = None,
        api_token: str | None = None,
    ) -> RolloutClient:
        """
        Connects to the Temporal front end (``host:port``; ``npx rollout dev`` prints it).

        ``namespace`` defaults to ``default``; ``task_queue`` to ``agent-rollout`` (the service's
        ``temporal.taskQueue``); ``api_url`` (default None: HTTP calls raise
        :class:`ApiNotConfiguredError`) is the API server's base URL, e.g. ``http://127.0.0.1:8400``;
        ``api_token`` is its bearer token (default: env ``ROLLOUT_API_TOKEN``; ``npx rollout dev``
        prints the file it minted it in).
        """
        client = await Client.connect(temporal_address, namespace=namespace)
        token = api_token if api_token is not None else os.environ.get("ROLLOUT_API_TOKEN")
        return cls(client, task_queue, HttpApi(api_url, token) if api_url else None)

    def handle(self, batch_id: str) -> WorkflowHandle[Any, Any]:
        """The batch's workflow handle (workflow id = batch id; follows continue-as-new)."""
        return self.temporal.get_workflow_handle(batch_id)

    async def start_batch(self, task_ids: Sequence[str], n: int, batch_id: str | None = None, **options: Any) -> str:
        """
        Starts a batch of ``n`` episodes per task and returns its id.

        ``batch_id`` defaults to a fresh ``batch-<hex>``. Starting an id that exists (running or
        finished) starts nothing and returns the id, so a trainer that restarts can call this again.
        ``options`` are the other ``BatchRequest`` fields in snake_case (``agent_name``,
        ``task_source``, ``concurrency``, ``filter_uniform_groups``, ``limits``, ``sampling``,
        ``max_staleness``, ``stale_action``...); left out, the workflow's defaults apply.
        """
        batch_id = batch_id or new_batch_id()
        request = batch_request(task_ids, n, batch_id, options)
        try:
            await self.temporal.start_workflow(
                BATCH_WORKFLOW,
                request,
                id=batch_id,
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
        except WorkflowAlreadyStartedError:
            pass  # a closed batch with this id: the same batch, already run
        return batch_id

    async def progress(self, batch_id: str) -> Progress:
        """The batch's live counts (its ``progress`` query)."""
        return await self.handle(batch_id).query("progress")

    async def follow(self, batch_id: str, interval_s: float = 1.0) -> AsyncIterator[Progress]:
        """
        Yields the batch's progress whenever it changed, polling every ``interval_s`` seconds
        (default 1), and ends once the batch workflow has closed; the last value is the final count.
        """
        handle = self.handle(batch_id)
        last: Progress | None = None
        while True:
            closed = (await handle.describe()).status != WorkflowExecutionStatus.RUNNING
            current = await handle.query("progress")
            if current != last:
                last = current
                yield current
            if closed:
                return
            await asyncio.sleep(interval_s)

    async def iter_groups(self, batch_id: str, after: int = 0) -> AsyncIterator[FinishedGroup]:
        """
        Yields each group as soon as it has finished, in finishing order, and ends when the batch is
        done. Filtered and failed groups are yielded too (their ``file`` is None). A group whose
        rows could not be exported (``export_failed``) raises :class:`IncompleteGroupError`, whose
        ``after`` resumes past it.

        ``after`` (default 0) is the number of groups already taken, to resume after a restart.
        A closed workflow takes no update, so once the batch has closed the rest come from its
        manifest, which lists the groups in the same finishing order the cursor counts.
        """
        if after < 0:
            raise ValueError(f"after must be >= 0, got {after}")
        handle = self.handle(batch_id)
        cursor = after
        failures = 0
        while True:
            try:
                page = await handle.execute_update("finishedGroups", {"after": cursor})
            except RPCError:
                # Still running: a run ending in continue-as-new under the call; the next run answers.
                if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                    failures += 1
                    if failures >= _UPDATE_ATTEMPTS:
                        raise
                    continue
                for offset, group in enumerate(manifest_groups(await self.result(batch_id))[cursor:]):
                    _check_whole(group, cursor + offset + 1)
                    yield group
                return
            failures = 0
            for offset, obj in enumerate(page["groups"]):
                group = FinishedGroup.from_json(obj)
                _check_whole(group, cursor + offset + 1)
                yield group
            cursor = page["next"]
            if page["done"]:
                return

    async def result(self, batch_id: str) -> Manifest:
        """
        Waits for the batch and returns its manifest. A cancelled batch ends cancelled in Temporal,
        without a result: its ``cancelled`` manifest is the answer of the ``manifest`` query. A
        manifest too large for a workflow result is read whole from its ``manifest_uri``.
        """
        handle = self.handle(batch_id)
        try:
            manifest: Manifest = await handle.result()
        except WorkflowFailureError as error:
            if not isinstance(error.cause, CancelledError):
                raise
            manifest = await handle.query("manifest")
        if "manifest_uri" in manifest:
            manifest = json.loads(open_uri(manifest["manifest_uri"]).read())
        return manifest

    @staticmethod
    def read_table(manifest: Manifest, verify: bool = True) -> pa.Table:
        """Every row of a finished batch (all files of its manifest); ``verify`` (default True) checks them."""
        return arrow.read_table(manifest, verify)

    @property
    def api(self) -> HttpApi:
        if self._api is None:
            raise ApiNotConfiguredError("this client was connected without api_url")
        return self._api

    async def policy(self) -> dict[str, Any]:
        """The current policy version and whether generation is paused."""
        return await self.api.policy()

    async def pause(self, mode: PauseMode = "finish") -> dict[str, Any]:
        """
        Pauses generation before a weight update; returns once the gateway is quiescent.
        ``finish`` (default) lets in-flight turns complete; ``abort`` aborts them and keeps their
        tokens so they resume on the new weights. New model calls wait until :meth:`resume`.
        """
        return await self.api.pause(mode)

    async def resume(self, version: int) -> dict[str, Any]:
        """Resumes generation under policy ``version`` (>= the current one)."""
        return await self.api.resume(version)

    async def logprob_consistency(
        self,
        batch_id: str,
        logprobs: Mapping[str, Sequence[float]],
        temperature: float | None = None,
        logprobs_mode: str | None = None,
    ) -> dict[str, Any]:
        """
        Sends the trainer's recomputed log-probs, ``trajectory_id -> values over the response
        tokens`` (``input_ids[prompt_length:]``; see :func:`agent_rollout.logprobs_by_trajectory`),
        and returns the service's report (Pearson correlation of token probabilities, mean absolute
        probability difference, worst trajectories), which it also stores with the batch.

        ``temperature`` and ``logprobs_mode`` (``"raw"`` or ``"processed"``) say what the trainer
        recomputed at: only tokens recorded at them are compared (the report's ``compared``), every
        other group is reported apart in ``groups``. Default None: the one value the batch recorded.
        """
        return await self.api.logprob_consistency(batch_id, logprobs, temperature, logprobs_mode)
