"""
Two GRPO steps against a running agent-rollout (start one with `npx rollout dev`).

Each step starts a batch, takes its groups as they finish (computing each group's advantages on
arrival), "trains" on them (no GPU here: it prints the statistics a trainer would log), checks the
trainer/inference log-prob consistency, then pauses generation, bumps the policy version as a
weight update would, and resumes before the next step.

    ROLLOUT_API_TOKEN=$(cat .data/api-token) \
        python examples/grpo_loop.py --temporal-address 127.0.0.1:7233 --api-url http://127.0.0.1:8400

The batch API's bearer token comes from the environment (`ROLLOUT_API_TOKEN`): `rollout dev`
mints it in `<dataDir>/api-token`.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np
import pyarrow as pa

from agent_rollout import RolloutClient, logprobs_by_trajectory, to_verl

DEFAULT_TASKS = ["py-slugify-1", "js-csv-split-1", "py-roman-numerals-1", "js-lru-cache-1"]


def group_advantages(rewards: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """GRPO: each sample's reward minus its group's mean, over the group's standard deviation."""
    return (rewards - rewards.mean()) / (rewards.std() + eps)


def train(batch: dict[str, np.ndarray], advantages: np.ndarray, rng: np.random.Generator) -> dict[str, float]:
    """
    Stands in for a policy-gradient update: the token-level GRPO surrogate on the rollout's own
    log-probs, and "recomputed" log-probs (the rollout's plus a little noise) for the consistency check.
    """
    mask = batch["response_mask"].astype(np.float32)
    token_adv = advantages[:, None] * mask
    logp = batch["rollout_log_probs"]
    recomputed = logp + rng.normal(0, 0.01, logp.shape).astype(np.float32) * mask
    return {
        "samples": float(len(advantages)),
        "groups": float(len(set(batch["uid"]))),
        "trained_tokens": float(mask.sum()),
        "mean_reward": float(batch["token_level_scores"].sum(axis=1).mean()),
        "mean_abs_advantage": float(np.abs(advantages).mean()),
        "pg_loss": float(-(token_adv * logp).sum() / max(mask.sum(), 1.0)),
        "recomputed": recomputed,
    }


async def run_step(client: RolloutClient, step: int, args: argparse.Namespace, rng: np.random.Generator) -> None:
    started = time.monotonic()
    batch_id = await client.start_batch(args.tasks, args.n, batch_id=f"{args.run}-step-{step}", filter_uniform_groups=not args.keep_uniform_groups)
    print(f"step {step}: batch {batch_id} ({len(args.tasks)} tasks x {args.n})")
    tables: list[pa.Table] = []
    advantages: list[np.ndarray] = []
    async for group in client.iter_groups(batch_id):
        waited = time.monotonic() - started
        if group.file is None:
            print(f"  {waited:6.1f}s group {group.group_id} {group.status}: rewards {group.rewards}, nothing to train on")
            continue
        table = group.read_table()
        rewards = np.asarray(table.column("reward").to_numpy(), dtype=np.float32)
        tables.append(table)
        advantages.append(group_advantages(rewards))
        print(f"  {waited:6.1f}s group {group.group_id} ({group.task_id}): {table.num_rows} chains, rewards {rewards.tolist()}")
    manifest = await client.result(batch_id)
    print(f"  batch {manifest['status']}: {manifest['stats']['episodes']} episodes, {manifest['stats']['tokens']} tokens")
    if not tables:
        print("  every group was filtered or failed: no update this step")
        return
    batch = to_verl(pa.concat_tables(tables))
    stats = train(batch, np.concatenate(advantages), rng)
    recomputed = stats.pop("recomputed")
    print("  train: " + ", ".join(f"{k} {v:.4g}" for k, v in stats.items()))
    report = await client.logprob_consistency(batch_id, logprobs_by_trajectory(batch, recomputed))
    print(f"  log-prob consistency: {report}")
    paused = await client.pause("finish")
    resumed = await client.resume(paused["version"] + 1)
    print(f"  weights updated: policy version {paused['version']} -> {resumed['version']}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--temporal-address", default="127.0.0.1:7233", help="Temporal front end (default 127.0.0.1:7233)")
    parser.add_argument("--api-url", default="http://127.0.0.1:8400", help="agent-rollout batch API (default http://127.0.0.1:8400)")
    parser.add_argument("--task-queue", default="agent-rollout", help="the service's temporal.taskQueue (default agent-rollout)")
    parser.add_argument("--tasks", nargs="+", default=DEFAULT_TASKS, help="task ids of the built-in pack (default: four of them)")
    parser.add_argument("--n", type=int, default=4, help="samples per task, the GRPO group size (default 4)")
    parser.add_argument(
        "--keep-uniform-groups",
        action="store_true",
        help="train on groups whose rewards are all equal too (zero advantage); default: the batch filters them",
    )
    parser.add_argument("--steps", type=int, default=2, help="training steps (default 2)")
    parser.add_argument("--run", default=f"grpo-{int(time.time())}", help="run name, prefix of the batch ids (default grpo-<unix time>)")
    args = parser.parse_args()
    client = await RolloutClient.connect(args.temporal_address, task_queue=args.task_queue, api_url=args.api_url)
    rng = np.random.default_rng(0)
    for step in range(1, args.steps + 1):
        await run_step(client, step, args, rng)


if __name__ == "__main__":
    asyncio.run(main())
