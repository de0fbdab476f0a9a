"""GEP (Zhang et al., "Auditing Gender Presentation Differences in Text-to-Image Models"): one
folder for the paper. ``probes`` builds its suites from ``probes.yaml``; ``task`` declares the
task (CLIP existence labels -> GEP vectors and scores); ``figures`` draws GEP Fig. 2;
``paper_checks`` recomputes its printed tables from ``data/``; ``metadata`` declares its scores
and ``citation`` its citation. ``task.py``'s ``REGISTRATIONS`` lists everything the folder
registers; importing it registers nothing (the registries' loader does, in folder order).
"""

from benchmark.tasks.gep import probes, task

__all__ = ["probes", "task"]
