"""A batch started from Python over Temporal, checked against what the gateway recorded in its store."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest
import recorded
from conftest import BATCH_N, BATCH_TASKS, OPTIONS, TASK_QUEUE, DevStack, FinishedBatch
from temporalio.client import WorkflowExecutionStatus

from agent_rollout import (
    TRAJECTORY_SCHEMA,
    ApiNotConfiguredError,
    ConversionError,
    FileCheckError,
    RolloutClient,
    SyncRolloutClient,
    logprobs_by_trajectory,
    to_token_arrays,
    to_verl,
)


def test_follow_yields_progress_until_every_episode_is_done(finished_batch: FinishedBatch) -> None:
    total = len(BATCH_TASKS) * BATCH_N
    assert finished_batch.progress, "follow yielded nothing"
    done = [p["done"] for p in finished_batch.progress]
    assert done == sorted(done)
    last = finished_batch.progress[-1]
    assert (last["batchId"], last["total"], last["done"]) == (finished_batch.batch_id, total, total)
    assert last["ok"] + last["infraErrors"] == total


def test_manifest_groups_and_rewards_match_the_store(stack: DevStack, finished_batch: FinishedBatch) -> None:
    manifest = finished_batch.manifest
    assert manifest["batch_id"] == finished_batch.batch_id
    # Groups are listed in the order they finished, which the episodes' timing decides.
    assert sorted(g["task_id"] for g in manifest["groups"]) == sorted(BATCH_TASKS)
    episodes = recorded.episodes(stack.store, finished_batch.batch_id)
    assert len(episodes) == len(BATCH_TASKS) * BATCH_N
    for group in manifest["groups"]:
        mine = [e for e in episodes if e.group_id == group["group_id"]]
        assert {e.task_id for e in mine} == {group["task_id"]}
        expected = [None] * BATCH_N
        for e in mine:
            if e.outcome == "ok":
                expected[e.episode_index] = e.reward
        assert group["rewards"] == expected
        assert group["n_ok"] == sum(r is not None for r in expected)


def test_rows_are_the_recorded_tokens_masks_and_rewards(stack: DevStack, finished_batch: FinishedBatch) -> None:
    table = finished_batch.table
    for field in TRAJECTORY_SCHEMA:
        assert table.schema.field(field.name).type == field.type, field.name
    chains = recorded.chains(stack.store, finished_batch.batch_id)
    assert table.num_rows == sum(f["rows"] for f in finished_batch.manifest["files"]) == len(chains) > 0
    for row in table.to_pylist():
        chain = chains[row["trajectory_id"]]
        assert row["group_id"] == chain.group_id and row["task_id"] == chain.task_id
        assert row["input_ids"] == chain.input_ids.tolist()
        assert row["sampled_mask"] == chain.sampled.tolist()
        assert row["loss_mask"] == chain.sampled.tolist()
        assert np.array_equal(np.array(row["logprobs"], np.float32), chain.logprobs)
        assert row["prompt_length"] == chain.prompt_length
        assert row["reward"] == pytest.approx(chain.reward)


def test_verl_layout_pads_masks_and_scores_like_the_agent_loop(stack: DevStack, finished_batch: FinishedBatch) -> None:
    chains = recorded.chains(stack.store, finished_batch.batch_id)
    batch = to_verl(finished_batch.table)
    b = finished_batch.table.num_rows
    lp = max(c.prompt_length for c in chains.values())
    lr = max(len(c.input_ids) - c.prompt_length for c in chains.values())
    assert batch["prompts"].shape == (b, lp) and batch["responses"].shape == (b, lr)
    for key in ("input_ids", "attention_mask", "position_ids"):
        assert batch[key].shape == (b, lp + lr), key
    for key in ("response_mask", "rollout_log_probs", "token_level_scores"):
        assert batch[key].shape == (b, lr), key
    for i, tid in enumerate(batch["trajectory_id"]):
        chain = chains[tid]
        p, r = chain.prompt_length, len(chain.input_ids) - chain.prompt_length
        assert batch["uid"][i] == chain.group_id
        assert batch["prompts"][i, lp - p :].tolist() == chain.input_ids[:p].tolist()
        assert not batch["prompts"][i, : lp - p].any()
        assert batch["responses"][i, :r].tolist() == chain.input_ids[p:].tolist()
        assert not batch["responses"][i, r:].any()
        assert batch["attention_mask"][i].tolist() == [0] * (lp - p) + [1] * (p + r) + [0] * (lr - r)
        assert batch["position_ids"][i, lp - p : lp + r].tolist() == list(range(p + r))
        assert batch["input_ids"][i].tolist() == batch["prompts"][i].tolist() + batch["responses"][i].tolist()
        assert batch["response_mask"][i].tolist() == chain.sampled[p:].tolist() + [0] * (lr - r)
        assert np.array_equal(batch["rollout_log_probs"][i, :r], chain.logprobs[p:])
        expected_scores = np.zeros(lr, np.float32)
        expected_scores[r - 1] = chain.reward
        assert np.array_equal(batch["token_level_scores"][i], expected_scores)


def test_verl_layout_cuts_long_responses_and_refuses_long_prompts(finished_batch: FinishedBatch) -> None:
    table = finished_batch.table
    prompt_lens = np.array(table.column("prompt_length").to_pylist())
    response_lens = np.array([len(ids) for ids in table.column("input_ids").to_pylist()]) - prompt_lens
    cut = int(response_lens.min())
    batch = to_verl(table, response_length=cut)
    assert batch["responses"].shape[1] == cut
    rewards = np.array(table.column("reward").to_pylist(), np.float32)
    assert np.array_equal(batch["token_level_scores"][:, cut - 1], rewards)
    assert not batch["token_level_scores"][:, : cut - 1].any()
    assert batch["attention_mask"][:, -1].all()
    with pytest.raises(ConversionError, match="prompt_length"):
        to_verl(table, prompt_length=int(prompt_lens.max()) - 1)


def test_token_arrays_lay_rows_end_to_end(stack: DevStack, finished_batch: FinishedBatch) -> None:
    chains = recorded.chains(stack.store, finished_batch.batch_id)
    tokens = to_token_arrays(finished_batch.table)
    assert tokens.num_rows == finished_batch.table.num_rows
    assert tokens.offsets[-1] == len(tokens.input_ids) == len(tokens.row) == len(tokens.position)
    for i, tid in enumerate(tokens.trajectory_id):
        chain = chains[tid]
        span = tokens.span(i)
        assert np.array_equal(tokens.input_ids[span], chain.input_ids)
        assert np.array_equal(tokens.loss_mask[span], chain.sampled)
        assert np.array_equal(tokens.logprobs[span], chain.logprobs)
        assert (tokens.row[span] == i).all()
        assert tokens.position[span].tolist() == list(range(len(chain.input_ids)))
        assert tokens.prompt_length[i] == chain.prompt_length and tokens.group_id[i] == chain.group_id
    one_group = finished_batch.table.filter(pa.compute.equal(finished_batch.table.column("group_id"), tokens.group_id[0]))
    assert to_token_arrays(one_group).offsets[-1] == sum(len(chains[t].input_ids) for t in one_group.column("trajectory_id").to_pylist())


def test_logprobs_by_trajectory_takes_each_rows_real_response(stack: DevStack, finished_batch: FinishedBatch) -> None:
    chains = recorded.chains(stack.store, finished_batch.batch_id)
    batch = to_verl(finished_batch.table)
    by_id = logprobs_by_trajectory(batch, batch["rollout_log_probs"])
    assert set(by_id) == set(chains)
    for tid, values in by_id.items():
        assert np.array_equal(np.array(values, np.float32), chains[tid].logprobs[chains[tid].prompt_length :])


def test_starting_a_batch_id_again_starts_nothing(stack: DevStack, finished_batch: FinishedBatch) -> None:
    async def run() -> None:
        client = await RolloutClient.connect(stack.temporal_address, task_queue=TASK_QUEUE)
        handle = client.handle(finished_batch.batch_id)
        before = await handle.describe()
        assert before.status == WorkflowExecutionStatus.COMPLETED
        assert await client.start_batch(BATCH_TASKS, BATCH_N, batch_id=finished_batch.batch_id, **OPTIONS) == finished_batch.batch_id
        after = await handle.describe()
        assert (after.run_id, after.status) == (before.run_id, before.status)

        running_id = await client.start_batch(["py-word-wrap-1"], 2, **OPTIONS)
        first = (await client.handle(running_id).describe()).run_id
        assert await client.start_batch(["py-word-wrap-1"], 2, batch_id=running_id, **OPTIONS) == running_id
        assert (await client.handle(running_id).describe()).run_id == first
        await client.result(running_id)

    asyncio.run(run())


def test_sync_client_runs_a_batch_end_to_end(stack: DevStack) -> None:
    with SyncRolloutClient(stack.temporal_address, task_queue=TASK_QUEUE) as client:
        batch_id = client.start_batch(["js-lru-cache-1"], 2, **OPTIONS)
        seen = list(client.follow(batch_id, interval_s=0.2))
        manifest = client.result(batch_id)
        table = client.read_table(manifest)
        assert seen[-1]["done"] == 2
        assert table.num_rows == sum(f["rows"] for f in manifest["files"])
        assert set(table.column("batch_id").to_pylist()) <= {batch_id}
        assert table.num_rows == len(recorded.chains(stack.store, batch_id))
        with pytest.raises(ApiNotConfiguredError):
            client.pause()


def test_reading_a_file_that_differs_from_the_manifest_fails(finished_batch: FinishedBatch) -> None:
    ref = finished_batch.manifest["files"][0]
    with pytest.raises(FileCheckError, match="sha256"):
        RolloutClient.read_table({**finished_batch.manifest, "files": [{**ref, "sha256": "0" * 64}]})
    with pytest.raises(FileCheckError, match="rows"):
        RolloutClient.read_table({**finished_batch.manifest, "files": [{**ref, "rows": ref["rows"] + 1}]})
    with pytest.raises(FileCheckError, match="unsupported"):
        RolloutClient.read_table({**finished_batch.manifest, "files": [{**ref, "uri": "gs://bucket/part.arrow"}]})


def test_a_closed_batch_hands_over_each_group_with_its_own_rows(stack: DevStack, finished_batch: FinishedBatch) -> None:
    chains = recorded.chains(stack.store, finished_batch.batch_id)

    async def run() -> list:
        client = await RolloutClient.connect(stack.temporal_address, task_queue=TASK_QUEUE)
        return [g async for g in client.iter_groups(finished_batch.batch_id)]

    groups = asyncio.run(run())
    assert [g.group_id for g in groups] == [g["group_id"] for g in finished_batch.manifest["groups"]]
    for group in groups:
        rows = group.read_table().to_pylist()
        assert sorted(r["trajectory_id"] for r in rows) == sorted(t for t, c in chains.items() if c.group_id == group.group_id)
        for row in rows:
            assert row["input_ids"] == chains[row["trajectory_id"]].input_ids.tolist()
