"""Tasks: one declaration per paper family (its suites, the annotators it needs, its scorer).

``benchmark.tasks.registry`` holds the task types (the registry itself, ``TASKS``, is one of
:mod:`benchmark.registries`); every subfolder (``benchmark/tasks/<paper>/``)
is one paper's task, found by :mod:`benchmark.tasks.discovery`; ``context`` is what a scorer
works with; :mod:`benchmark.tasks.of_run` says which tasks a run holds;
:mod:`benchmark.tasks.inputs` holds the run inputs a task declares (``TaskInput``).
"""

from benchmark.tasks.human_validation import AgreementTable, AnswersAsLabels, HumanValidation, LabelsCard
from benchmark.tasks.inputs import TaskInput
from benchmark.tasks.registry import (
    PLUGIN_ENTRY_POINTS,
    TASKS,
    HumanQuestion,
    ImageLayout,
    Task,
    TaskReport,
    check_probe_config,
    get_task,
    list_tasks,
    load_plugins,
    task_of_family,
    tasks_for_suites,
)

__all__ = ["PLUGIN_ENTRY_POINTS", "TASKS", "AgreementTable", "AnswersAsLabels", "HumanQuestion", "HumanValidation", "ImageLayout", "LabelsCard", "Task", "TaskInput", "TaskReport", "check_probe_config", "get_task", "list_tasks", "load_plugins",
           "task_of_family", "tasks_for_suites"]
