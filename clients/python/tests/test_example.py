"""The example trainer loop, run as a trainer would run it against the stack."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TASK_QUEUE, DevStack


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "grpo_loop.py"


def test_grpo_loop_runs_two_steps_and_bumps_the_policy_version_each_time(stack: DevStack) -> None:
    version = asyncio.run(stack.client().policy())["version"]
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--temporal-address", stack.temporal_address, "--api-url", stack.api_url]
        + ["--task-queue", TASK_QUEUE, "--n", "2", "--run", "example", "--keep-uniform-groups", "--tasks", "py-slugify-1", "js-csv-split-1"],
        check=False,
        # The example's client takes the API token from the environment, as a trainer's would.
        env={**os.environ, "ROLLOUT_API_TOKEN": stack.api_token},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    bumps = re.findall(r"policy version (\d+) -> (\d+)", done.stdout)
    assert [(int(a), int(b)) for a, b in bumps] == [(version, version + 1), (version + 1, version + 2)], done.stdout
