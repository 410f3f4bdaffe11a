"""A blocking facade over :class:`RolloutClient`, for trainer loops that are not asyncio programs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
from typing import Any, Self, TypeVar

from .client import DEFAULT_TASK_QUEUE, FinishedGroup, RolloutClient
from .http import PauseMode
from .types import Manifest, Progress

T = TypeVar("T")


class SyncRolloutClient:
    """
    The same calls as :class:`RolloutClient`, blocking. The Temporal client lives on an event
    loop in a daemon thread owned by this object; :meth:`close` stops it.
    """

    def __init__(
        self,
        temporal_address: str,
        namespace: str = "default",
        task_queue: str = DEFAULT_TASK_QUEUE,
        api_url: str | None = None,
        api_token: str | None = None,
    ) -> None:
        """Connects like :meth:`RolloutClient.connect`, with the same defaults."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agent-rollout", daemon=True)
        self._thread.start()
        self.client = self._run(RolloutClient.connect(temporal_address, namespace, task_queue, api_url, api_token))

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _iterate(self, agen: AsyncIterator[T]) -> Iterator[T]:
        try:
            while True:
                try:
                    yield self._run(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            self._run(agen.aclose())  # type: ignore[attr-defined]

    def start_batch(self, task_ids: Sequence[str], n: int, batch_id: str | None = None, **options: Any) -> str:
        return self._run(self.client.start_batch(task_ids, n, batch_id, **options))

    def progress(self, batch_id: str) -> Progress:
        return self._run(self.client.progress(batch_id))

    def follow(self, batch_id: str, interval_s: float = 1.0) -> Iterator[Progress]:
        return self._iterate(self.client.follow(batch_id, interval_s))

    def iter_groups(self, batch_id: str, after: int = 0) -> Iterator[FinishedGroup]:
        return self._iterate(self.client.iter_groups(batch_id, after))

    def result(self, batch_id: str) -> Manifest:
        return self._run(self.client.result(batch_id))

    read_table = staticmethod(RolloutClient.read_table)

    def policy(self) -> dict[str, Any]:
        return self._run(self.client.policy())

    def pause(self, mode: PauseMode = "finish") -> dict[str, Any]:
        return self._run(self.client.pause(mode))

    def resume(self, version: int) -> dict[str, Any]:
        return self._run(self.client.resume(version))

    def logprob_consistency(
        self,
        batch_id: str,
        logprobs: Mapping[str, Sequence[float]],
        temperature: float | None = None,
        logprobs_mode: str | None = None,
    ) -> dict[str, Any]:
        return self._run(self.client.logprob_consistency(batch_id, logprobs, temperature, logprobs_mode))

    def close(self) -> None:
        """Stops the event loop thread. The client is unusable afterwards."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["SyncRolloutClient"]
