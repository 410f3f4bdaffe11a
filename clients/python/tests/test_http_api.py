"""The HTTP batch API and the gateway's policy routes, called through the client."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import numpy as np
import pytest
import recorded
from conftest import DevStack, FinishedBatch

from agent_rollout import ApiError, RolloutClient, logprobs_by_trajectory, to_verl



def _client(stack: DevStack) -> RolloutClient:
    return stack.client()


def _find(report: Any, word: str) -> Any:
    """The value under the first key containing `word`, at any depth: the report's key names are the server's to choose."""
    if isinstance(report, dict):
        for key, value in report.items():
            if word in key.lower():
                return value
        for value in report.values():
            found = _find(value, word)
            if found is not None:
                return found
    return None


def test_pause_then_resume_moves_the_policy_to_the_new_version(stack: DevStack) -> None:
    client = _client(stack)

    async def run() -> None:
        before = await client.policy()
        assert before["paused"] is False
        try:
            paused = await client.pause("finish")
            assert paused["paused"] is True and paused["version"] == before["version"]
            assert (await client.policy())["paused"] is True
        finally:
            resumed = await client.resume(before["version"] + 1)
        assert resumed == {"version": before["version"] + 1, "paused": False}
        assert await client.policy() == {"version": before["version"] + 1, "paused": False}

    asyncio.run(run())


def test_the_api_token_comes_from_the_environment_and_a_wrong_or_missing_one_is_refused(stack: DevStack, monkeypatch: pytest.MonkeyPatch) -> None:
    async def status(api_token: str | None) -> int:
        client = await RolloutClient.connect(stack.temporal_address, api_url=stack.api_url, api_token=api_token)
        try:
            await client.policy()
        except ApiError as error:
            return error.status
        return 200

    monkeypatch.setenv("ROLLOUT_API_TOKEN", stack.api_token)
    assert asyncio.run(status(None)) == 200
    assert asyncio.run(status("wrong")) == 401
    monkeypatch.delenv("ROLLOUT_API_TOKEN")
    assert asyncio.run(status(None)) == 401


def test_resuming_to_an_older_version_is_refused(stack: DevStack) -> None:
    client = _client(stack)

    async def run() -> None:
        current = (await client.policy())["version"]
        await client.pause("abort")
        try:
            with pytest.raises(ApiError) as refused:
                await client.resume(current - 1)
            assert 400 <= refused.value.status < 500
        finally:
            await client.resume(current)

    asyncio.run(run())


def test_logprob_consistency_tells_agreement_from_a_perturbed_trajectory(stack: DevStack, finished_batch: FinishedBatch) -> None:
    client = _client(stack)
    batch = to_verl(finished_batch.table)
    same = logprobs_by_trajectory(batch, batch["rollout_log_probs"])
    chains = recorded.chains(stack.store, finished_batch.batch_id)
    assert set(same) == set(chains)
    victim = max(same, key=lambda t: len(same[t]))
    shifted = dict(same)
    shifted[victim] = (np.array(same[victim]) - 1.0).tolist()

    async def run() -> tuple[dict, dict]:
        return (
            await client.logprob_consistency(finished_batch.batch_id, same),
            await client.logprob_consistency(finished_batch.batch_id, shifted),
        )

    agree, disagree = asyncio.run(run())
    assert _find(agree, "pearson") == pytest.approx(1.0, abs=1e-6)
    assert _find(agree, "abs") == pytest.approx(0.0, abs=1e-6)
    assert _find(disagree, "abs") > 1e-3
    assert not math.isclose(_find(disagree, "pearson"), 1.0, abs_tol=1e-6)
    assert victim in json.dumps(_find(disagree, "worst"))
