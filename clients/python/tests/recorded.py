"""What the gateway recorded, read straight from its SQLite store (schema: trajectory/schema.ts)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class RecordedChain:
    trajectory_id: str
    group_id: str
    task_id: str
    episode_index: int
    reward: float
    input_ids: np.ndarray
    sampled: np.ndarray
    logprobs: np.ndarray
    prompt_length: int


@dataclass(frozen=True)
class RecordedEpisode:
    group_id: str
    task_id: str
    episode_index: int
    outcome: str
    reward: float | None


def _open(store: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{store}?mode=ro", uri=True)


def episodes(store: Path, batch_id: str) -> list[RecordedEpisode]:
    with _open(store) as db:
        rows = db.execute(
            "SELECT group_id, task_id, episode_index, outcome, reward FROM episodes WHERE batch_id = ? ORDER BY group_id, episode_index",
            (batch_id,),
        ).fetchall()
    return [RecordedEpisode(*row) for row in rows]


def chains(store: Path, batch_id: str) -> dict[str, RecordedChain]:
    """Every live chain of the batch's successful episodes: prompt deltas and sampled tokens of its turns, in order."""
    out: dict[str, RecordedChain] = {}
    with _open(store) as db:
        episode_rows = db.execute(
            "SELECT group_id, task_id, episode_index, session_id, reward FROM episodes WHERE batch_id = ? AND outcome = 'ok'",
            (batch_id,),
        ).fetchall()
        for group_id, task_id, episode_index, session_id, reward in episode_rows:
            turns = db.execute(
                "SELECT chain_index, prompt_delta, sampled, logprobs FROM turns WHERE session_id = ? AND rolled_back = 0 ORDER BY chain_index, seq",
                (session_id,),
            ).fetchall()
            by_chain: dict[int, list[tuple[bytes, bytes, bytes]]] = {}
            for chain_index, delta, sampled, logprobs in turns:
                by_chain.setdefault(chain_index, []).append((delta, sampled, logprobs))
            for chain_index, parts in by_chain.items():
                ids, mask, lps = [], [], []
                for delta, sampled, logprobs in parts:
                    d = np.frombuffer(delta, dtype="<i4")
                    s = np.frombuffer(sampled, dtype="<i4")
                    ids += [d, s]
                    mask += [np.zeros(len(d), np.uint8), np.ones(len(s), np.uint8)]
                    lps += [np.zeros(len(d), np.float32), np.frombuffer(logprobs, dtype="<f4")]
                tid = f"{group_id}_{episode_index}_{chain_index}"
                out[tid] = RecordedChain(
                    trajectory_id=tid,
                    group_id=group_id,
                    task_id=task_id,
                    episode_index=episode_index,
                    reward=float(reward or 0),
                    input_ids=np.concatenate(ids),
                    sampled=np.concatenate(mask),
                    logprobs=np.concatenate(lps),
                    prompt_length=len(np.frombuffer(parts[0][0], dtype="<i4")),
                )
    return out
