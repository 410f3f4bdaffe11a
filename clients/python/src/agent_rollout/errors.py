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


class IncompleteGroupError(RolloutError):
    """
    A group's rows could not be exported whole (status ``export_failed``): the episodes named in
    ``missing_episode_ids`` have no rows in any file. ``after`` is the cursor past this group, to
    resume :meth:`RolloutClient.iter_groups` after handling it.
    """

    def __init__(self, group_id: str, missing_episode_ids: list[str], after: int | None = None) -> None:
        super().__init__(f"group {group_id} is export_failed: rows of {', '.join(missing_episode_ids) or 'unknown episodes'} are missing")
        self.group_id = group_id
        self.missing_episode_ids = missing_episode_ids
        self.after = after


class NoGroupDataError(RolloutError):
    """``read_table`` was called on a group that has no file (status ``filtered`` or ``failure``)."""


class ConversionError(RolloutError):
    """Trajectories do not fit the requested trainer layout (e.g. a prompt longer than ``prompt_length``)."""
