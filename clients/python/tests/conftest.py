"""
Fixtures that run the real service: `npx rollout dev` (Temporal dev server, simulated engines,
gateway, worker, batch API) with a temp data dir and free ports; and a real S3-compatible server
(versitygw, built into .tools/bin by scripts/install-s3-server.sh).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.request import urlopen

import pyarrow as pa
import pytest

from agent_rollout import Manifest, RolloutClient

REPO = Path(__file__).resolve().parents[3]
TASK_QUEUE = "python-tests"
START_TIMEOUT_S = 180
STOP_TIMEOUT_S = 60

#: Uniform groups are kept so every group has rows; everything else takes the workflow's defaults.
OPTIONS = {"filter_uniform_groups": False}
BATCH_TASKS = ["py-slugify-1", "js-csv-split-1", "py-roman-numerals-1"]
BATCH_N = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class DevStack:
    temporal_address: str
    api_url: str
    data_dir: Path
    log: Path

    @property
    def api_token(self) -> str:
        """The batch API's bearer token, minted in the data dir by `rollout dev` (stack/paths.ts)."""
        return (self.data_dir / "api-token").read_text().strip()

    @property
    def store(self) -> Path:
        """The gateway's trajectory store (stack/paths.ts)."""
        return self.data_dir / "trajectories.sqlite"

    def client(self) -> RolloutClient:
        return asyncio.run(RolloutClient.connect(self.temporal_address, task_queue=TASK_QUEUE, api_url=self.api_url, api_token=self.api_token))


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    access_key: str
    secret_key: str

    def env(self) -> dict[str, str]:
        """The AWS_* variables that point a client at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
        }


def _versitygw() -> str:
    built = REPO / ".tools" / "bin" / "versitygw"
    found = str(built) if built.exists() else shutil.which("versitygw")
    if found is None:
        raise RuntimeError("no versitygw: run `bash scripts/install-s3-server.sh` (builds it into .tools/bin)")
    return found


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """versitygw over a temp directory on a free port of 127.0.0.1, with one root account."""
    root = tmp_path_factory.mktemp("s3")
    (root / "objects").mkdir()
    server = S3Server(f"http://127.0.0.1:{free_port()}", "pytest", secrets.token_hex(16))
    env = {**os.environ, "ROOT_ACCESS_KEY_ID": server.access_key, "ROOT_SECRET_ACCESS_KEY": server.secret_key}
    with (root / "s3-server.log").open("wb") as out:
        proc = subprocess.Popen(
            [_versitygw(), "--port", server.endpoint.removeprefix("http://"), "posix", str(root / "objects")],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urlopen(server.endpoint, timeout=1).close()
                break
            except HTTPError:
                break  # An unsigned request is refused: the server is up.
            except URLError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"versitygw did not start:\n{(root / 's3-server.log').read_text(errors='replace')}") from None
                time.sleep(0.1)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _stop(proc: subprocess.Popen[bytes], data_dir: Path) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            # The dev server runs in its own process group; its pid file says which one is ours.
            pid_file = data_dir / "temporal" / "server.pid"
            if pid_file.exists():
                try:
                    os.kill(int(pid_file.read_text()), signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    root = tmp_path_factory.mktemp("rollout-dev")
    data_dir = root / "data"
    temporal_port = free_port()
    config: dict = {
        "dataDir": str(data_dir),
        "temporal": {"taskQueue": TASK_QUEUE, "devServer": {"port": temporal_port, "uiPort": 0}},
        "gateway": {"port": 0},
        "engineSim": {"basePort": 0, "timeScale": 0.01},
        "worker": {"hostId": f"pytest-{os.getpid()}"},
    }
    api_port = free_port()
    config["api"] = {"port": api_port}
    api_url = f"http://127.0.0.1:{api_port}"
    config_file = root / "rollout.json"
    config_file.write_text(json.dumps(config))
    log = root / "dev.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["npx", "rollout", "dev", "-c", str(config_file)],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while "\nready;" not in (text := log.read_text(errors="replace")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"`npx rollout dev` did not become ready:\n{text}")
            time.sleep(0.2)
        # `rollout dev` says where it minted the API token (never the token itself).
        assert f"API token: {data_dir / 'api-token'}" in text, text
        yield DevStack(f"127.0.0.1:{temporal_port}", api_url, data_dir, log)
    finally:
        _stop(proc, data_dir)


@dataclass(frozen=True)
class FinishedBatch:
    batch_id: str
    manifest: Manifest
    table: pa.Table
    progress: list[dict]


@pytest.fixture(scope="session")
def finished_batch(stack: DevStack) -> FinishedBatch:
    """One batch started from Python with the options today's workflow needs, followed to its end."""

    async def run() -> FinishedBatch:
        client = await RolloutClient.connect(stack.temporal_address, task_queue=TASK_QUEUE)
        batch_id = await client.start_batch(BATCH_TASKS, BATCH_N, batch_id="py-batch-1", **OPTIONS)
        seen = [p async for p in client.follow(batch_id, interval_s=0.2)]
        manifest = await client.result(batch_id)
        return FinishedBatch(batch_id, manifest, client.read_table(manifest), seen)

    return asyncio.run(run())
