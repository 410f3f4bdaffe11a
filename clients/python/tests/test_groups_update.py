"""Groups handed over as they finish (the `finishedGroups` update), on a request with only task ids and n."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
import recorded
from conftest import BATCH_N, TASK_QUEUE, DevStack

from agent_rollout import FinishedGroup, Manifest, NoGroupDataError, Progress, RolloutClient


TASKS = ["py-slugify-1", "js-csv-split-1", "py-roman-numerals-1", "py-word-wrap-1"]


@dataclass(frozen=True)
class Streamed:
    batch_id: str
    groups: list[FinishedGroup]
    manifest: Manifest
    progress: Progress
    from_manifest: list[FinishedGroup]


@pytest.fixture(scope="module")
def streamed(stack: DevStack) -> Streamed:
    """A batch started with only task ids and n, its groups taken as they finish."""

    async def run() -> Streamed:
        client = await RolloutClient.connect(stack.temporal_address, task_queue=TASK_QUEUE)
        batch_id = await client.start_batch(TASKS, BATCH_N)
        groups = [g async for g in client.iter_groups(batch_id)]
        manifest = await client.result(batch_id)
        progress = await client.progress(batch_id)
        from_manifest = [g async for g in client.iter_groups(batch_id)]
        return Streamed(batch_id, groups, manifest, progress, from_manifest)

    return asyncio.run(run())


def test_a_request_with_only_task_ids_and_n_runs_on_defaults(streamed: Streamed) -> None:
    assert streamed.manifest["batch_id"] == streamed.batch_id
    assert sorted(g["task_id"] for g in streamed.manifest["groups"]) == sorted(TASKS)
    assert all(g["n_requested"] == BATCH_N for g in streamed.manifest["groups"])


def test_every_group_arrives_once_as_the_manifest_describes_it(streamed: Streamed) -> None:
    by_id = {g["group_id"]: g for g in streamed.manifest["groups"]}
    assert sorted(g.group_id for g in streamed.groups) == sorted(by_id)
    for group in streamed.groups:
        assert group.raw == by_id[group.group_id]
        assert (group.file is not None) == (group.status == "finished")
    assert streamed.progress["groupsFinished"] == len(TASKS)


def test_group_files_hold_exactly_the_chains_the_gateway_recorded(stack: DevStack, streamed: Streamed) -> None:
    chains = recorded.chains(stack.store, streamed.batch_id)
    for group in streamed.groups:
        if group.file is None:
            with pytest.raises(NoGroupDataError):
                group.read_table()
            continue
        rows = group.read_table().to_pylist()
        assert sorted(r["trajectory_id"] for r in rows) == sorted(t for t, c in chains.items() if c.group_id == group.group_id)
        for row in rows:
            chain = chains[row["trajectory_id"]]
            assert row["input_ids"] == chain.input_ids.tolist()
            assert row["loss_mask"] == chain.sampled.tolist()
            assert row["reward"] == pytest.approx(chain.reward)


def test_the_manifest_lists_the_group_files(streamed: Streamed) -> None:
    group_files = [g.file for g in streamed.groups if g.file is not None]
    assert sorted(f["uri"] for f in streamed.manifest["files"]) == sorted(f["uri"] for f in group_files)
    table = RolloutClient.read_table(streamed.manifest)
    assert table.num_rows == sum(g.read_table().num_rows for g in streamed.groups if g.file is not None)


def test_a_closed_batch_hands_its_groups_over_from_the_manifest(streamed: Streamed) -> None:
    assert sorted((g.group_id, g.status, g.file and g.file["uri"]) for g in streamed.from_manifest) == sorted(
        (g.group_id, g.status, g.file and g.file["uri"]) for g in streamed.groups
    )
    for group in streamed.from_manifest:
        if group.file is not None:
            assert set(group.read_table().column("group_id").to_pylist()) == {group.group_id}


def test_the_cursor_resumes_after_the_groups_already_taken(stack: DevStack) -> None:
    """One episode at a time, so the batch is still running when the second iterator starts."""

    async def run() -> None:
        client = await RolloutClient.connect(stack.temporal_address, task_queue=TASK_QUEUE)
        batch_id = await client.start_batch(TASKS[:3], 2, concurrency=1, filter_uniform_groups=False)
        first = client.iter_groups(batch_id)
        taken = [await anext(first)]
        await first.aclose()
        rest = [g async for g in client.iter_groups(batch_id, after=1)]
        manifest = await client.result(batch_id)
        assert sorted(g.group_id for g in taken + rest) == sorted(g["group_id"] for g in manifest["groups"])
        assert all(g.file is not None for g in taken + rest)
        closed = [g.group_id async for g in client.iter_groups(batch_id, after=1)]
        assert closed == [g["group_id"] for g in manifest["groups"][1:]]

    asyncio.run(run())
