"""PaintSkills (DALL-Eval Sec. 3, 4.1): one folder for the compositional-skill probes.
``scenes`` lays out the scenes, ``probes`` builds the suites from ``probes.yaml``; ``task``
declares the task (detector boxes -> object, count and spatial accuracy); ``figures`` draws
the accuracy per skill (DALL-Eval Table 2, Fig. 5a); ``metadata`` declares its scores (the
``dalleval`` folder cites the paper). ``glyphs``, ``render`` and
``sample_sheet`` draw the scenes (``python -m dataset_builders.paintskills`` renders the
dataset with them, :mod:`.scene_dataset`); ``detector/`` holds the ground-truth detector, the Table 2 baselines and
the DETR fine-tuning; ``cli`` adds their commands to ``t2ibench`` (``commands`` runs them);
``scene_dataset`` builds the rendered dataset, the dataset builder ``paintskills``. ``task.py``'s
``REGISTRATIONS`` lists everything the folder registers. Only ``probes`` and ``task`` are
imported here: the rest loads where it is used.
"""

from benchmark.tasks.paintskills import probes, task

__all__ = ["probes", "task"]
