"""Every number the papers print that we can recompute from their printed inputs."""

import pytest

from benchmark.tasks.paper_checks import all_checks, checked_families
from benchmark.papers import PAPERS


@pytest.mark.parametrize("family", ["gep", "dalleval", "pst", "mcas"])
def test_family_recomputes_its_printed_numbers(family):
    checks = all_checks((family,))
    assert checks, f"{family} has no paper checks"
    failed = [c for c in checks if not c.passed]
    assert not failed, "\n".join(f"{c.source} {c.quantity}: printed {c.printed}, got {c.recomputed}" for c in failed)
    for c in checks:
        assert c.paper in PAPERS and c.tolerance >= 0


def test_the_tasks_that_check_their_paper_are_found_in_the_task_folders():
    assert checked_families() == ("gep", "dalleval", "pst", "mcas")
