"""Fixtures shared by the test modules."""

import pytest


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The built-in tiny models' cache: one folder for the whole session, so each model is
    built once and every later use loads it back through the real ``from_pretrained`` path."""
    root = tmp_path_factory.getbasetemp() / "t2ibench-cache"
    mp = pytest.MonkeyPatch()
    mp.setenv("T2IBENCH_CACHE", str(root))
    yield root
    mp.undo()
