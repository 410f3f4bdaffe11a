"""
Trajectory tables to trainer layouts, as numpy arrays (torch optional, see :func:`as_torch`).

Every per-token column of a row has the length of ``input_ids``; the prompt is
``input_ids[:prompt_length]`` and the response (every later turn, tool outputs included) is the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import ConversionError

_TOKEN_COLUMNS = {
    "input_ids": np.int32,
    "loss_mask": np.uint8,
    "sampled_mask": np.uint8,
    "logprobs": np.float32,
    "token_version": np.int32,
}


@dataclass(frozen=True)
class TokenArrays:
    """
    A plain per-token layout: every row's tokens laid end to end, with ``offsets`` marking the rows
    (row ``i`` is ``offsets[i]:offsets[i+1]``), plus per-token position and row index.
    """

    input_ids: np.ndarray
    loss_mask: np.ndarray
    sampled_mask: np.ndarray
    logprobs: np.ndarray
    token_version: np.ndarray
    #: Position of each token within its row.
    position: np.ndarray
    #: Row index of each token.
    row: np.ndarray
    #: int64 [rows + 1].
    offsets: np.ndarray
    prompt_length: np.ndarray
    reward: np.ndarray
    group_id: np.ndarray
    trajectory_id: np.ndarray

    @property
    def num_rows(self) -> int:
        return len(self.offsets) - 1

    def span(self, i: int) -> slice:
        """The tokens of row ``i``."""
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))


def _flat(table: pa.Table, name: str, dtype: type) -> np.ndarray:
    column = table.column(name).combine_chunks()
    # flatten() honours slicing of the list array, unlike .values.
    return column.flatten().to_numpy(zero_copy_only=False).astype(dtype, copy=False)


def to_token_arrays(table: pa.Table) -> TokenArrays:
    """The per-token layout of a trajectory table (any subset of rows, e.g. one group's)."""
    lengths = pc.list_value_length(table.column("input_ids")).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    row = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    position = (np.arange(offsets[-1], dtype=np.int64) - offsets[:-1][row]).astype(np.int32)
    flat = {name: _flat(table, name, dtype) for name, dtype in _TOKEN_COLUMNS.items()}
    for name, values in flat.items():
        if len(values) != offsets[-1]:
            raise ConversionError(f"column {name} has {len(values)} tokens, input_ids {offsets[-1]}")
    return TokenArrays(
        **flat,
        position=position,
        row=row,
        offsets=offsets,
        prompt_length=table.column("prompt_length").to_numpy().astype(np.int64),
        reward=table.column("reward").to_numpy().astype(np.float32),
        group_id=np.array(table.column("group_id").to_pylist(), dtype=object),
        trajectory_id=np.array(table.column("trajectory_id").to_pylist(), dtype=object),
    )


def to_verl(
    table: pa.Table,
    prompt_length: int | None = None,
    response_length: int | None = None,
    pad_token_id: int = 0,
) -> dict[str, np.ndarray]:
    """
    The fields verl's agent loop hands its trainer (``AgentLoopManager._postprocess``), one row per
    chain, as numpy arrays:

    - ``prompts`` [B, Lp] left-padded, ``responses`` [B, Lr] right-padded, ``input_ids`` their
      concatenation, ``attention_mask`` 1 on real tokens, ``position_ids`` counting real tokens
      from 0 (0 on padding), all int64;
    - ``response_mask`` [B, Lr]: the row's ``loss_mask`` over the response (0 on tool outputs and
      padding); ``rollout_log_probs`` [B, Lr] float32, the engine's log-probs (0 elsewhere);
    - ``token_level_scores`` [B, Lr] float32: the reward on the last response token, 0 elsewhere
      (what verl's agent loop calls ``rm_scores``);
    - non-tensor, dtype object: ``uid`` (= ``group_id``, the GRPO group), ``trajectory_id``, ``task_id``.

    ``prompt_length`` (Lp) and ``response_length`` (Lr) default to the longest in the table. A
    response longer than Lr is cut to Lr, as verl cuts it, and its reward moves to the last kept
    token; a prompt longer than Lp raises :class:`ConversionError` (cutting it would train on a
    context the model never saw). ``pad_token_id`` (default 0) fills padding in the id arrays.
    """
    tokens = to_token_arrays(table)
    b = tokens.num_rows
    prompt_lens = tokens.prompt_length
    full_lens = np.diff(tokens.offsets)
    response_lens = full_lens - prompt_lens
    if b and (response_lens <= 0).any():
        bad = tokens.trajectory_id[int(np.argmax(response_lens <= 0))]
        raise ConversionError(f"trajectory {bad} has no response tokens to carry its reward")
    lp = int(prompt_lens.max(initial=0)) if prompt_length is None else prompt_length
    lr = int(response_lens.max(initial=0)) if response_length is None else response_length
    if b and prompt_lens.max() > lp:
        bad = tokens.trajectory_id[int(np.argmax(prompt_lens))]
        raise ConversionError(f"trajectory {bad} has a {int(prompt_lens.max())}-token prompt, longer than prompt_length={lp}")
    if lr < 1:
        raise ConversionError(f"response_length must be at least 1, got {lr}")

    prompts = np.full((b, lp), pad_token_id, dtype=np.int64)
    responses = np.full((b, lr), pad_token_id, dtype=np.int64)
    attention = np.zeros((b, lp + lr), dtype=np.int64)
    response_mask = np.zeros((b, lr), dtype=np.int64)
    rollout_log_probs = np.zeros((b, lr), dtype=np.float32)
    scores = np.zeros((b, lr), dtype=np.float32)
    for i in range(b):
        start = int(tokens.offsets[i])
        p = int(prompt_lens[i])
        r = min(int(response_lens[i]), lr)
        prompt = slice(start, start + p)
        response = slice(start + p, start + p + r)
        prompts[i, lp - p :] = tokens.input_ids[prompt]
        responses[i, :r] = tokens.input_ids[response]
        attention[i, lp - p : lp + r] = 1
        response_mask[i, :r] = tokens.loss_mask[response]
        rollout_log_probs[i, :r] = tokens.logprobs[response]
        scores[i, r - 1] = tokens.reward[i]
    position_ids = np.clip(np.cumsum(attention, axis=1) - 1, 0, None)
    return {
        "prompts": prompts,
        "responses": responses,
        "input_ids": np.concatenate([prompts, responses], axis=1),
        "attention_mask": attention,
        "position_ids": position_ids,
        "response_mask": response_mask,
        "rollout_log_probs": rollout_log_probs,
        "token_level_scores": scores,
        "uid": tokens.group_id,
        "trajectory_id": tokens.trajectory_id,
        "task_id": np.array(table.column("task_id").to_pylist(), dtype=object),
    }


def logprobs_by_trajectory(batch: Mapping[str, np.ndarray], log_probs: np.ndarray) -> dict[str, list[float]]:
    """
    The trainer's recomputed log-probs [B, Lr] (e.g. verl's ``old_log_probs``) of a :func:`to_verl`
    batch, keyed by trajectory id over each row's real response tokens: the input of
    :meth:`RolloutClient.logprob_consistency`.
    """
    values = np.asarray(log_probs)
    lp = batch["prompts"].shape[1]
    lengths = batch["attention_mask"][:, lp:].sum(axis=1)
    if values.shape != batch["responses"].shape:
        raise ConversionError(f"log_probs has shape {values.shape}, the batch's responses {batch['responses'].shape}")
    return {str(tid): values[i, : int(lengths[i])].astype(float).tolist() for i, tid in enumerate(batch["trajectory_id"])}


def as_torch(batch: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The numeric arrays as torch tensors (object arrays stay numpy), ready for ``DataProto.from_single_dict``."""
    import torch

    return {k: v if v.dtype == object else torch.from_numpy(v) for k, v in batch.items()}
