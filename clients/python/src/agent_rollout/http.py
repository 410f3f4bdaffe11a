"""The service's HTTP API (policy control, log-prob consistency) over urllib: no extra dependency."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.error import HTTPError
from urllib.parse import quote
from urllib.request import Request, urlopen

from .errors import ApiError

PauseMode = Literal["finish", "abort"]


class HttpApi:
    """
    A thin JSON client of the API server (``npx rollout dev`` starts it; config ``api.port``).

    ``token`` is the API's bearer token (config ``api.token``; ``rollout dev`` mints one in
    ``<dataDir>/api-token``); every route needs it. ``timeout_s`` (default 600) bounds one request:
    ``pause`` answers only once the gateway is quiescent, which takes as long as the longest
    in-flight turn.
    """

    def __init__(self, base_url: str, token: str | None = None, timeout_s: float = 600.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        url = f"{self.base_url}{path}"
        data = None if body is None else json.dumps(body).encode()
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        request = Request(url, data=data, method=method, headers=headers)
        try:
            with urlopen(request, timeout=self.timeout_s) as response:
                text = response.read().decode()
        except HTTPError as error:
            raise ApiError(method, url, error.code, error.read().decode(errors="replace")) from None
        return json.loads(text) if text else None

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """One request in a worker thread, so the event loop (and Temporal calls on it) keep running."""
        return await asyncio.to_thread(self._call, method, path, body)

    async def policy(self) -> dict[str, Any]:
        """``GET /v1/policy`` -> ``{"version", "paused"}``."""
        return await self.call("GET", "/v1/policy")

    async def pause(self, mode: PauseMode = "finish") -> dict[str, Any]:
        """``POST /v1/policy/pause``; returns once the gateway is quiescent."""
        if mode not in ("finish", "abort"):
            raise ValueError(f"pause mode must be 'finish' or 'abort', not {mode!r}")
        return await self.call("POST", "/v1/policy/pause", {"mode": mode})

    async def resume(self, version: int) -> dict[str, Any]:
        """``POST /v1/policy/resume`` with the new policy version (>= the current one)."""
        return await self.call("POST", "/v1/policy/resume", {"version": int(version)})

    async def logprob_consistency(
        self,
        batch_id: str,
        logprobs: Mapping[str, Sequence[float]],
        temperature: float | None = None,
        logprobs_mode: str | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/batches/{id}/logprobs``: see :meth:`RolloutClient.logprob_consistency`."""
        body: dict[str, Any] = {"trajectories": [{"trajectory_id": tid, "logprobs": [float(x) for x in values]} for tid, values in logprobs.items()]}
        if temperature is not None:
            body["temperature"] = temperature
        if logprobs_mode is not None:
            body["logprobs_mode"] = logprobs_mode
        return await self.call("POST", f"/v1/batches/{quote(batch_id, safe='')}/logprobs", body)
