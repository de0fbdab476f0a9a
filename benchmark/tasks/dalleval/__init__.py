"""DALL-Eval social bias (Cho et al., Sec. 4.2): one folder for the paper's social-bias probes.
``probes`` builds ``dalleval_bias`` from ``probes.yaml``; ``task`` declares the task (perceived
gender, skin tone and attributes -> MAD and average values); ``figures`` draws the
distributions per profession; ``paper_checks`` recomputes its printed tables from ``data/``;
``release_ita`` declares the skin-tone ITA variant of the paper's released code.
``metadata`` declares its scores and ``citation`` the paper's citation; ``task.py``'s
``REGISTRATIONS`` lists everything the folder registers.
(DALL-Eval's PaintSkills probes have their own folder, ``paintskills``.)
"""

from benchmark.tasks.dalleval import probes, release_ita, task

__all__ = ["probes", "release_ita", "task"]
