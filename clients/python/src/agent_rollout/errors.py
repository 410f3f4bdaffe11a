"""Errors the client raises; all derive from :class:`RolloutError`."""

from __future__ import annotations


class RolloutError(Exception):
    """Base class of every error raised by agent_rollout."""


class ApiNotConfiguredError(RolloutError):
    """An HTTP API call was made on a client connected without ``api_url``."""


class ApiError(RolloutError):
    """The HTTP API answered with an error status."""

    def __init__(self, method: str, url: str, status: int, body: str) -> None:
        super().__init__(f"{method} {url} -> {status}: {body[:500]}")
        self.status = status
        self.body = body


class FileCheckError(RolloutError):
    """A trajectory file is missing, has an unsupported URI, or its sha256 or row count differs from the manifest."""


class NoGroupDataError(RolloutError):
    """``read_table`` was called on a group that has no file (status ``filtered`` or ``failure``)."""


class ConversionError(RolloutError):
    """Trajectories do not fit the requested trainer layout (e.g. a prompt longer than ``prompt_length``)."""
