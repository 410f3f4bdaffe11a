"""Reading trajectory files by s3:// (a real versitygw) and http:// (a local http.server) URIs."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pytest
from pyarrow import fs

from agent_rollout import read_file
from agent_rollout.arrow import group_ids
from agent_rollout.errors import FileCheckError
from agent_rollout.types import FileRef

from conftest import S3Server

BUCKET = "trajectories"
TOKEN = "s3cret-token"


def _arrow_stream(groups: list[str]) -> bytes:
    table = pa.table({"group_id": groups, "reward": pa.array([float(i) for i in range(len(groups))], pa.float32())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _ref(uri: str, data: bytes, rows: int) -> FileRef:
    return {"uri": uri, "format": "arrow-stream", "rows": rows, "sha256": hashlib.sha256(data).hexdigest()}


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> fs.S3FileSystem:
    """The AWS_* environment pointing at the test server, and a filesystem on it with the bucket made."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    s3 = fs.S3FileSystem(
        endpoint_override=s3_server.endpoint.removeprefix("http://"),
        scheme="http",
        region="us-east-1",
        access_key=s3_server.access_key,
        secret_key=s3_server.secret_key,
        allow_bucket_creation=True,
    )
    s3.create_dir(BUCKET)
    return s3


def test_reads_an_s3_object_and_checks_it(s3_env: fs.S3FileSystem) -> None:
    data = _arrow_stream(["g0", "g0", "g1"])
    with s3_env.open_output_stream(f"{BUCKET}/batch-1/groups/g.arrow") as out:
        out.write(data)
    ref = _ref(f"s3://{BUCKET}/batch-1/groups/g.arrow", data, 3)
    table = read_file(ref)
    assert table.column("group_id").to_pylist() == ["g0", "g0", "g1"]
    assert group_ids(ref) == {"g0", "g1"}
    with pytest.raises(FileCheckError, match="sha256"):
        read_file({**ref, "sha256": "0" * 64})
    with pytest.raises(FileCheckError, match="does not exist"):
        read_file({**ref, "uri": f"s3://{BUCKET}/batch-1/groups/missing.arrow"})


def test_s3_with_wrong_credentials_is_a_file_check_error(s3_env: fs.S3FileSystem, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _arrow_stream(["g0"])
    with s3_env.open_output_stream(f"{BUCKET}/denied.arrow") as out:
        out.write(data)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(FileCheckError, match=f"s3://{BUCKET}/denied.arrow"):
        read_file(_ref(f"s3://{BUCKET}/denied.arrow", data, 1))


class _BearerHandler(SimpleHTTPRequestHandler):
    """Serves a directory to requests that carry the bearer token."""

    def do_GET(self) -> None:
        if self.headers.get("authorization") != f"Bearer {TOKEN}":
            self.send_error(401)
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_dir(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_BearerHandler, directory=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tmp_path
    finally:
        server.shutdown()
        server.server_close()


def test_reads_an_http_file_with_the_bearer_token(http_dir: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    base, root = http_dir
    data = _arrow_stream(["g2", "g2"])
    (root / "g2.arrow").write_bytes(data)
    ref = _ref(f"{base}/g2.arrow", data, 2)
    monkeypatch.delenv("ROLLOUT_API_TOKEN", raising=False)
    with pytest.raises(FileCheckError, match="HTTP 401"):
        read_file(ref)
    monkeypatch.setenv("ROLLOUT_API_TOKEN", TOKEN)
    assert read_file(ref).column("group_id").to_pylist() == ["g2", "g2"]
    with pytest.raises(FileCheckError, match="rows"):
        read_file({**ref, "rows": 3})
    with pytest.raises(FileCheckError, match="does not exist"):
        read_file({**ref, "uri": f"{base}/missing.arrow"})


def test_reads_local_paths_and_file_uris(tmp_path: Path) -> None:
    data = _arrow_stream(["g3"])
    path = tmp_path / "g3.arrow"
    path.write_bytes(data)
    for uri in (str(path), path.as_uri()):
        assert read_file(_ref(uri, data, 1)).column("group_id").to_pylist() == ["g3"]
    with pytest.raises(FileCheckError, match="unsupported"):
        read_file(_ref("ftp://host/g3.arrow", data, 1))
