"""What a bench run measured: the commit of the checkout it ran from, so that a committed figure can be
traced to the code that made it (bench/measured/ keeps runs made at many commits)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git(*cmd: str) -> str:
    """The output of ``git -C <checkout> *cmd``; "" where git, or the repository, is missing."""
    try:
        return subprocess.run(["git", "-C", str(ROOT), *cmd], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def checkout_commit() -> str | None:
    """HEAD's short hash, with " + uncommitted changes" when tracked files differ from it; None
    outside a git checkout."""
    head = git("rev-parse", "--short=12", "HEAD")
    if not head:
        return None
    return head + (" + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")
