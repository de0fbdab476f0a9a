"""PaintSkills (DALL-Eval Sec. 3, 4.1): one folder for the compositional-skill probes.
``scenes`` lays out the scenes, ``probes`` builds the suites from ``probes.yaml``; ``task``
declares the task (detector boxes -> object, count and spatial accuracy); ``figures`` draws
the accuracy per skill (DALL-Eval Table 2, Fig. 5a); ``metadata`` registers its scores (the
``dalleval`` folder cites the paper).
"""

from benchmark.tasks.paintskills import probes, task

__all__ = ["probes", "task"]
