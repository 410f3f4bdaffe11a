"""The result stream of the Python runners: one JSON line per test result on fd 3, which the
reward's shell opened on the channel the host reads (tasks/reward/test-run.ts).

The write primitive is bound when this module is imported, before the code under test loads, so
later monkeypatching of ``os`` or ``json`` does not silence the stream. fd 3 is made
non-inheritable so that processes the tests start do not get it. Outside the reward (fd 3 not a
pipe or socket) nothing is written.
"""

import json
import os
import stat

FD = 3
_write = os.write
_dumps = json.dumps


def _is_channel(fd):
    try:
        mode = os.fstat(fd).st_mode
        return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
    except OSError:
        return False


_open = _is_channel(FD)
if _open:
    os.set_inheritable(FD, False)


def _send(record):
    global _open
    if not _open:
        return
    data = (_dumps(record) + "\n").encode("utf-8")
    try:
        # A pipe or socket may take a long line in pieces.
        while data:
            data = data[_write(FD, data):]
    except OSError:
        _open = False


def result(test_id, status):
    """One test's status: ``passed``, ``failed`` or ``skipped``."""
    _send({"id": test_id, "status": status})


def end():
    """The run finished normally."""
    _send({"end": True})
