"""A sixth paper as one folder (a test fixture): tests/test_task_folder.py copies it into a
temporary tasks path (``$T2IBENCH_TASKS_PATH``) and audits a model with it, with no other
file edited. It shows every part a paper's folder can hold: its citation, probes
(``probes.py`` + ``probes.yaml``), an annotator, a score and its metadata, a figure, a
human question and the task declaration (``task.py``).
"""

from . import annotator, probes, task

__all__ = ["annotator", "probes", "task"]
