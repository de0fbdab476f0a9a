"""Test helper for tests/test_queue_trust.py: one worker round in its own process, with the
audit replaced by a copy of a real tiny audit (so that a kill costs seconds, not an audit).

    python tests/_queue_worker.py QUEUE RESULTS RUNS WORKER_ID TINY_AUDIT HEARTBEAT_TIMEOUT

The environment variable ``T2IBENCH_WORKER_KILL_AT`` (submissions.worker_options.KILL_AT_ENV) makes
the worker SIGKILL itself at that point. Prints ``audited`` each time the audit runs.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

from benchmark import frozen_imports

frozen_imports.install()  # the worker's imports as `t2ibench` makes them (benchmark/frozen_imports.py)

from submissions.request_store import LocalRequestStore  # noqa: E402
from submissions.worker import work_once  # noqa: E402
from submissions.worker_options import WorkerOptions  # noqa: E402


def main() -> int:
    queue, results, runs, worker_id, tiny_audit, timeout = sys.argv[1:7]

    def audit(record, opts):
        print("audited", flush=True)
        run_dir = opts.runs_dir / record.request_id
        shutil.copytree(tiny_audit, run_dir, dirs_exist_ok=True)  # a resumed run folder ends the same
        return SimpleNamespace(results_path=run_dir / "results.json", main_process=True)

    opts = WorkerOptions(worker_id=worker_id, runs_dir=Path(runs), results_folder=Path(results),
                         heartbeat_timeout=float(timeout), progress=False)
    outcome = work_once(LocalRequestStore(queue), opts, audit=audit)
    return 0 if outcome.status in ("finished", "none") else 1


if __name__ == "__main__":
    sys.exit(main())
