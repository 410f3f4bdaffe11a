"""
Opening a trajectory file by the URI a manifest names: a local path or ``file://`` URI (a
directory store, possibly on a shared file system), ``s3://bucket/key`` (S3-compatible object
storage), or ``http(s)://`` (a file served over HTTP, such as the batch API's group files).

Environment:

- ``AWS_ENDPOINT_URL`` (an S3-compatible server, e.g. ``http://127.0.0.1:7070``; default AWS S3),
  ``AWS_REGION`` or ``AWS_DEFAULT_REGION`` (default ``us-east-1``), ``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY`` and ``AWS_SESSION_TOKEN`` (default: the AWS SDK's own credential chain)
  for ``s3://``;
- ``ROLLOUT_API_TOKEN``, sent as ``Authorization: Bearer <token>`` on ``http(s)://`` when set.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse
from urllib.request import Request, url2pathname, urlopen

import pyarrow as pa
from pyarrow import fs

from .errors import FileCheckError

HTTP_TIMEOUT_S = 600.0


def open_uri(uri: str) -> pa.NativeFile:
    """
    A readable Arrow file for ``uri``: a local file memory-mapped (token lists are not copied), a
    remote one read whole into memory (one download serves both the sha256 check and the read).
    """
    scheme = urlparse(uri).scheme
    if scheme == "s3":
        return pa.BufferReader(_read_s3(uri))
    if scheme in ("http", "https"):
        return pa.BufferReader(_read_http(uri))
    if scheme in ("", "file"):
        return _open_local(uri)
    raise FileCheckError(f"unsupported trajectory file URI {uri!r}: expected a path, file://, s3:// or http(s)://")


def _open_local(uri: str) -> pa.NativeFile:
    path = Path(url2pathname(urlparse(uri).path)) if uri.startswith("file:") else Path(uri)
    if not path.is_file():
        raise FileCheckError(f"trajectory file {path} does not exist (is this machine sharing the service's data directory?)")
    return pa.memory_map(str(path))


def _s3_filesystem() -> fs.S3FileSystem:
    env = os.environ
    options: dict[str, str] = {"region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"}
    endpoint = env.get("AWS_ENDPOINT_URL")
    if endpoint:
        parsed = urlparse(endpoint)
        options["endpoint_override"] = parsed.netloc
        options["scheme"] = parsed.scheme or "https"
    if env.get("AWS_ACCESS_KEY_ID"):
        options["access_key"] = env["AWS_ACCESS_KEY_ID"]
        options["secret_key"] = env.get("AWS_SECRET_ACCESS_KEY", "")
        if env.get("AWS_SESSION_TOKEN"):
            options["session_token"] = env["AWS_SESSION_TOKEN"]
    # Path-style addressing (pyarrow's default), which S3-compatible servers expect.
    return fs.S3FileSystem(**options)


def _read_s3(uri: str) -> pa.Buffer:
    # Sliced rather than parsed as a URL: object keys may hold '?' or '#'.
    path = uri[len("s3://") :]
    try:
        with _s3_filesystem().open_input_stream(path) as stream:
            return stream.read_buffer()
    except FileNotFoundError:
        raise FileCheckError(f"trajectory file {uri} does not exist") from None
    except OSError as error:
        raise FileCheckError(f"cannot read trajectory file {uri}: {error}") from None


def _read_http(uri: str) -> pa.Buffer:
    token = os.environ.get("ROLLOUT_API_TOKEN")
    request = Request(uri, headers={"authorization": f"Bearer {token}"} if token else {})
    try:
        with urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            return pa.py_buffer(response.read())
    except HTTPError as error:
        if error.code == 404:
            raise FileCheckError(f"trajectory file {uri} does not exist") from None
        raise FileCheckError(f"cannot read trajectory file {uri}: HTTP {error.code} {error.reason}") from None
    except URLError as error:
        raise FileCheckError(f"cannot read trajectory file {uri}: {error.reason}") from None
