"""What a stage killed in the middle leaves in a run folder, and its removal by the next stage.

Every write into a run folder is staged: a file is written beside its target under a temporary
name and renamed (:func:`benchmark.contract.atomic.atomic_path`: ``.<name>.<pid>.<thread>.tmp``),
the report is drawn into a staging folder first (:func:`staging_dir`:
``.report-staging-<pid>-<random>``), a generation batch into ``.partial/`` (the generation stage
removes those itself: :func:`benchmark.contract.run_folder.clean_partial`). A kill between the two
steps leaves the staged copy behind; before issue 51 a ``.report-staging-*`` folder stayed for
good, since no rerun removed it.

:func:`remove_leftovers` is what every stage (generate, annotate, score, report) calls first: it
removes the staged entries whose process is gone. The process id in the name tells a leftover
from the work of a stage running now in another process (``t2ibench report`` while ``score``
runs): an entry whose process is alive on this machine, or is this process, is kept. A run
folder is worked on by one machine's stages at a time (the ranks of a multi-node generation
write only under ``.partial/``), so a process id is looked up on this machine. Images
(``images/``) and ``.partial/`` are never walked.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["STAGING_SUFFIX", "remove_leftovers", "staging_dir", "leftover_owner"]

#: a staging folder is ``.<stage>-staging-<pid>-<random>`` (``.<stage>-staging-<random>`` before issue 51)
STAGING_SUFFIX = "-staging-"
_STAGING = re.compile(r"^\.(?P<stage>[a-z_]+)-staging-(?:(?P<pid>\d+)-)?[A-Za-z0-9_]+$")
#: :func:`benchmark.contract.atomic.atomic_path`'s temporary name
_ATOMIC_TMP = re.compile(r"^\..+\.(?P<pid>\d+)\.\d+\.tmp$")
#: top-level folders never walked: the images (batches are renamed in whole) and the generation
#: stage's own staging area
_NOT_WALKED = ("images", ".partial")


def staging_dir(run_dir: str | Path, stage: str) -> Path:
    """A new, empty staging folder ``RUN_DIR/.<stage>-staging-<pid>-<random>`` (the caller removes
    it; a kill leaves it to :func:`remove_leftovers`)."""
    return Path(tempfile.mkdtemp(prefix=f".{stage}{STAGING_SUFFIX}{os.getpid()}-", dir=run_dir))


def leftover_owner(name: str, is_dir: bool) -> tuple[bool, int | None]:
    """(whether ``name`` is a staged entry, the process id its name holds, None when it holds none)."""
    match = (_STAGING if is_dir else _ATOMIC_TMP).match(name)
    if match is None:
        return False, None
    pid = match["pid"]
    return True, None if pid is None else int(pid)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (this process included)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: asks only whether the process exists
    except PermissionError:  # another user's process
        return True
    except (OSError, OverflowError):  # no such process, or a number no process id can be
        return False
    return True


def _stale(entry: os.DirEntry) -> bool:
    is_dir = entry.is_dir(follow_symlinks=False)
    staged, pid = leftover_owner(entry.name, is_dir)
    return staged and (pid is None or not _alive(pid))


def remove_leftovers(run_dir: str | Path, *, quiet: bool = False) -> list[Path]:
    """Remove the staged files and folders of stopped processes under RUN_DIR (see the module
    docstring) and return them; one line on stderr names what went, unless ``quiet``."""
    root = Path(run_dir)
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if _stale(entry):
                path = Path(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                removed.append(path)
            elif entry.is_dir(follow_symlinks=False) and not (folder == root and entry.name in _NOT_WALKED):
                stack.append(Path(entry.path))
    if removed and not quiet:
        shown = ", ".join(p.relative_to(root).as_posix() for p in removed[:3])
        more = f" and {len(removed) - 3} more" if len(removed) > 3 else ""
        print(f"t2ibench: removed what a stopped stage left in {root}: {shown}{more}", file=sys.stderr)
    return sorted(removed)
