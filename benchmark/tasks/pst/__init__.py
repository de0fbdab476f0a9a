"""Paired Stereotype Test (Wan & Chang): one folder for the paper. ``probes`` builds its suites
from ``probes.yaml``; ``task`` declares the task (perceived gender -> STS, PST Eq. 1-2);
``figures`` draws PST Fig. 3; ``paper_checks`` recomputes its printed tables from ``data/``;
``metadata`` declares its scores and ``citation`` its citation; ``task.py``'s ``REGISTRATIONS``
lists everything the folder registers.
"""

from benchmark.tasks.pst import probes, task

__all__ = ["probes", "task"]
