"""The worker's options (:class:`WorkerOptions`: its id, where results go, the audit's settings,
the heartbeat timeout), its limits, its two errors (:class:`LostClaim`, :class:`AuditRefused`)
and the test hook that kills it at a named point (:func:`kill_point`).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from benchmark.cli_types import output_folder
from submissions.requests import WORKER_PREFIX

DEFAULT_HEARTBEAT_TIMEOUT_S = 1800.0
#: the longest heartbeat timeout (a week: longer than any audit), a worker's own and the one a record
#: announces alike: past it, a request whose worker stopped would wait for ever (``heartbeat_timeout_s:
#: 1e300`` held a request RUNNING since 2020), and a timer would overflow
MAX_HEARTBEAT_S = 7 * 86_400.0
#: the longest ``--poll`` (a day: an idle worker still looks once a day); past it a sleep overflows
MAX_POLL_S = 86_400.0
DEFAULT_MAX_ATTEMPTS = 3
MAX_ATTEMPTS = 100
CLAIM_TRIES = 3  # refused claims of one request in one round while it stays PENDING
MAX_WRITE_TRIES = 20  # conditional writes of one update before giving up (a very busy Hub dataset)
WORKER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
# Tests set this to a point name below to have the worker SIGKILL itself there (tests/test_queue_trust.py).
KILL_AT_ENV = "T2IBENCH_WORKER_KILL_AT"
KILL_POINTS = ("claimed", "audited", "provenance_added", "posted")


def kill_point(name: str) -> None:
    """Die by SIGKILL at ``name`` when the test hook asks for it: proves every point between the
    claim and FINISHED can be resumed without a second results file."""
    if os.environ.get(KILL_AT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


class LostClaim(RuntimeError):
    """The request is no longer this worker's (re-queued by another worker after a missed heartbeat)."""


class AuditRefused(RuntimeError):
    """The audit ran but its results are not valid: the request fails with this one line."""


@dataclass
class WorkerOptions:
    worker_id: str
    runs_dir: Path
    results_repo: str | None = None
    results_folder: Path | None = None
    images_repo: str | None = None  # ORG/NAME: each request's images go to ORG/NAME-<model>-<commit>
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    suites: list[str] | None = None  # None: every suite of the probe set
    probes: str | None = None  # the probe set every request is audited on: None (built in), a folder, a Hub ID
    probes_revision: str | None = None
    limit_per_suite: int | None = None
    batch_size: int | str | None = None  # None: auto, as `t2ibench run`
    device: str | None = None
    compile: bool | None = None  # None: the runner's default (on on CUDA); False: --no-compile
    offload: str | None = None  # None: auto (offload only what does not fit the GPU)
    n_resamples: int = 1000
    progress: bool = True
    token: str | None = None
    log: Callable[[str], None] = field(default=lambda line: print(line, flush=True))

    def __post_init__(self):
        if not isinstance(self.worker_id, str) or not WORKER_ID.match(self.worker_id):
            raise ValueError(f"worker id must be 1 to 64 letters, digits, '.', '_', ':' or '-', got {self.worker_id!r}")
        if (self.results_repo is None) == (self.results_folder is None):
            raise ValueError("give exactly one of --results ORG/RESULTS or --results-folder DIR")
        if not 0 < self.heartbeat_timeout <= MAX_HEARTBEAT_S:  # NaN fails too
            raise ValueError(f"--heartbeat-timeout must be a number of seconds above 0 and at most "
                             f"{MAX_HEARTBEAT_S:g} (a week), got {self.heartbeat_timeout}")
        if not 1 <= self.max_attempts <= MAX_ATTEMPTS:
            raise ValueError(f"--max-attempts must be from 1 to {MAX_ATTEMPTS}, got {self.max_attempts}")
        if self.images_repo is not None and (self.images_repo.count("/") != 1 or not all(self.images_repo.split("/"))):
            raise ValueError(f"--images must look like ORG/NAME, got {self.images_repo!r}")
        self.runs_dir = Path(self.runs_dir)
        if self.results_folder is not None:
            self.results_folder = Path(self.results_folder)
        self.check_outputs()

    def check_outputs(self) -> None:
        """Refuse (one line) a results folder or runs folder that cannot be written, or that is a
        run folder or lies inside one (:func:`benchmark.cli_types.output_folder`, the rule of
        ``--results-folder`` and ``--runs-dir``): checked before any request is claimed, so a bad
        folder never turns a request FAILED."""
        for option, folder in (("--results-folder", self.results_folder), ("--runs-dir", self.runs_dir)):
            if folder is None:
                continue
            try:
                output_folder(str(folder))
            except argparse.ArgumentTypeError as exc:
                raise ValueError(f"{option}: {exc}") from None

    @property
    def evaluated_by(self) -> str:
        return f"{WORKER_PREFIX}{self.worker_id}"

    @property
    def heartbeat_interval(self) -> float:
        return max(0.2, self.heartbeat_timeout / 4)

    def say(self, text: str) -> None:
        self.log(f"worker {self.worker_id}: {text}")


def check_poll(poll: float) -> float:
    """``--poll``: seconds from 0.1 to :data:`MAX_POLL_S` (ValueError otherwise)."""
    if isinstance(poll, bool) or not isinstance(poll, (int, float)) or not 0.1 <= poll <= MAX_POLL_S:
        raise ValueError(f"--poll must be a number of seconds from 0.1 to {MAX_POLL_S:g} (a day), got {poll!r}")
    return float(poll)


def default_worker_id() -> str:
    import os
    import socket

    host = re.sub(r"[^A-Za-z0-9._-]+", "-", socket.gethostname()).strip(".-")[:40] or "host"
    return f"{host}-{os.getpid()}"
