"""`t2ibench` as the tests run it: in this process where only the command's work matters (a fresh
interpreter per call costs its imports), in a process of its own where the test needs one (an
audit that loads the tiny models, a check of what a real process prints)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from benchmark import cli

REPO = Path(__file__).resolve().parents[1]


def exit_status(argv, main=None) -> int:
    """The exit status ``t2ibench ARGV`` (or the script whose ``main`` is given) has when run in
    this process: main()'s return value, or the code of the SystemExit argparse raises for a
    usage error."""
    try:
        return (main or cli.main)([str(a) for a in argv])
    except SystemExit as exc:
        return exc.code


def run_here(*args, check: bool = True) -> SimpleNamespace:
    """``t2ibench ARGS`` in this process, as a finished process would give it: returncode,
    stdout and stderr (with ``check``, the exit status must be 0)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = exit_status(args)
    proc = SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())
    if check:
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def run_process(*args: str, root: Path, check: bool = True) -> subprocess.CompletedProcess:
    """``t2ibench ARGS`` in a process of its own, offline, its tiny models cached under ROOT/cache."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "T2IBENCH_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    if check:
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def run_here_or_under(*args, env: dict | None = None):
    """``t2ibench ARGS`` in this process (:func:`run_here`, unchecked), or, given ``env``, in a
    process of its own under it: an environment the Hub client reads when it is imported."""
    if env is None:
        return run_here(*args, check=False)
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)
