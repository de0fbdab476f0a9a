"""Tasks: one declaration per paper family (its suites, the annotators it needs, its scorer).

``benchmark.tasks.registry`` holds the registry; ``gep``, ``dalleval``, ``pst``, ``mcas`` and
``paintskills`` declare the five families; ``context`` is what a scorer works with.
"""

from benchmark.tasks.registry import (
    PLUGIN_ENTRY_POINTS,
    TASKS,
    ImageLayout,
    Task,
    TaskReport,
    check_probe_config,
    get_task,
    list_tasks,
    load_plugins,
    register_task,
    task_of_family,
    tasks_for_suites,
)

__all__ = ["PLUGIN_ENTRY_POINTS", "TASKS", "ImageLayout", "Task", "TaskReport", "check_probe_config", "get_task", "list_tasks", "load_plugins",
           "register_task", "task_of_family", "tasks_for_suites"]
