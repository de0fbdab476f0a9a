"""Folders the tests build once per test session and share between the xdist workers."""

import os
import shutil
from pathlib import Path


def shared_across_workers(tmp_path_factory, name: str, build) -> Path:
    """The folder ``build(folder)`` makes, built once per test session and shared by the xdist
    workers: the first worker to ask builds it under a file lock in the session's common temp
    folder (the parent of each worker's basetemp), the others wait for it and reuse it. Without
    xdist it is built in this session's own temp folder. Only for folders the tests read or copy,
    never write."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = tmp_path_factory.mktemp(name)
        build(folder)
        return folder
    from filelock import FileLock  # installed with huggingface_hub

    common = tmp_path_factory.getbasetemp().parent  # pytest-N: this session's, shared by its workers
    folder, done = common / f"shared-{name}", common / f"shared-{name}.done"
    with FileLock(str(common / f"shared-{name}.lock")):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed in another worker
            folder.mkdir()
            build(folder)
            done.touch()
    return folder
