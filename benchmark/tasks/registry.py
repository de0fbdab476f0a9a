"""Tasks: one declaration per paper family, the only map from suites to the labels they need
and the scores they get (the registry, ``TASKS``, is one of :mod:`benchmark.registries`).

A :class:`Task` scores the suites of one probe family (``Task.family``; a suite's family is
set where the suite is registered, or in a probe dataset's ``probe_set.json``). It names the
annotator kinds it needs (:mod:`benchmark.annotate.registry`) with its parameters for them
(e.g. which questions to ask), and a scorer that turns the label files into score entries
through :class:`benchmark.tasks.context.ScoringContext`, calling :mod:`benchmark.scores`.
The annotate and score stages loop over the tasks of a run's suites; adding a paper means
registering a task (and its suites, annotators and score metadata), no runner edit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Callable, Mapping, Sequence

from benchmark.registries import TASKS, load
from benchmark.tasks.human_validation import HumanValidation

__all__ = ["Task", "TaskReport", "HumanQuestion", "ImageLayout", "DetailReader", "TASKS", "get_task", "list_tasks", "task_of_family", "tasks_for_suites",
           "check_probe_config", "PLUGIN_ENTRY_POINTS", "load_plugins", "task_options"]

#: packages outside this one register suites, annotators, scores and tasks when imported:
#: name them in this entry-point group (or import them with ``t2ibench --plugin MODULE``)
PLUGIN_ENTRY_POINTS = "t2ibench.plugins"


@dataclass(frozen=True)
class ImageLayout:
    """How the report lays out a suite's images: rows of ``group`` values, ``member`` values side
    by side in a row (in ``order`` first), ``caption`` columns under each image."""

    title: str  # what one row of the grid shows
    group: tuple[str, ...] = ()  # manifest columns that make a row (empty: one row)
    member: str | None = None  # manifest column whose values sit side by side in a row
    order: tuple[str, ...] = ()  # preferred member values, in order
    caption: tuple[str, ...] = ("prompt",)  # manifest columns written under each image
    row_title: str = "{0}"  # a row's title from its group values


#: a run's detail table by name (``scores/<name>.parquet``), or None
DetailReader = Callable[[str], Any]


@dataclass(frozen=True)
class TaskReport:
    """A task's section of the report (and the leaderboard's plots).

    ``figures(read_detail, score_entries, out_dir) -> [(file, caption)]`` draws the paper's
    figures; ``tables(read_detail) -> [(title, headers, rows)]`` gives tables a reader wants;
    ``layout(suite_rows) -> ImageLayout`` lays out a suite's image grid (None: a plain grid);
    ``image_labels(read_detail)`` gives a function ``row -> [lines]`` of task-specific labels
    written under an image, beside the label files' own (perceived gender, attributes...).
    ``excluded`` says what each reason this task leaves images out for (the keys it gives
    ``SuiteStatus.add_excluded``) means: the report's legend of the suites table.
    """

    title: str
    figures: Callable[[DetailReader, Sequence[Mapping], Any], list[tuple[str, str]]] | None = None
    tables: Callable[[DetailReader], list[tuple[str, list[str], list[list]]]] | None = None
    layout: Callable[[Any], ImageLayout | None] | None = None
    image_labels: Callable[[DetailReader], Callable[[Mapping], list[str]]] | None = None
    excluded: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HumanQuestion:
    """One question a human labeller is asked about an image: its type (a question type of
    :mod:`benchmark.human.question_types`: ``attribute``, ``gender_single``, ``gender_paired``,
    ``skin_tone``), its key within the image (the attribute, ``left`` / ``right``, or ``""``)
    and its wording."""

    question_type: str
    key: str
    text: str


@dataclass(frozen=True)
class Task:
    """How one paper family is annotated and scored.

    ``annotators`` maps an annotator kind to this task's parameters for it (None when the
    annotator needs none). ``score(ctx, suites)`` adds score entries, detail tables and
    notes for ``suites`` (the task's suites present in the run) to ``ctx``.
    ``check_config(config)`` raises ValueError (one line) for a probe config the task cannot
    score, e.g. PST's stereotyped gender, which is binary by definition. ``report``: its
    section of the report (:class:`TaskReport`). ``paper_checks``: the paper's printed numbers
    recomputed from its printed inputs.
    """

    name: str
    family: str
    papers: tuple[str, ...]
    annotators: Mapping[str, Any]
    score: Callable[[Any, list[str]], None]
    check_config: Callable[[dict], None] | None = None
    description: str = ""
    report: TaskReport | None = None
    #: ``() -> [PaperCheck]``: the paper's printed numbers recomputed (:mod:`benchmark.tasks.paper_checks`)
    paper_checks: Callable[[], list] | None = None
    #: ``(probe row, probe config) -> [HumanQuestion]``: what the labelling app asks about an image
    human_questions: Callable[[Mapping, dict], list[HumanQuestion]] | None = None
    #: the task's own scoring options and their defaults (``ctx.options.of(task.name)``); results.json
    #: records each as ``scoring["<task>_<option>"]``
    options: Mapping[str, Any] = field(default_factory=dict)
    #: (paper, where printed starts with, quantity starts with): the paper checks ``t2ibench
    #: reproduce`` shows one by one as the paper's headline numbers
    headline_checks: tuple[tuple[str, str, str], ...] = ()
    #: how people label the task's images and its automatic labels are checked against theirs
    #: (:class:`benchmark.tasks.human_validation.HumanValidation`; None: the question types' defaults)
    human_validation: HumanValidation | None = None


def load_plugins(modules: Sequence[str] = ()) -> None:
    """Import the task folders and the ``t2ibench.plugins`` entry points once (the registries'
    loader, :func:`benchmark.registries.load`), then ``modules``."""
    load()
    for module in modules:
        try:
            import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                raise ValueError(f"--plugin {module}: no such module (is it on PYTHONPATH?)") from None
            raise


def task_options(given: Mapping[str, Mapping] | None = None) -> dict:
    """Each task's scoring options: its declared defaults, updated by ``given`` (task -> option ->
    value); ValueError (one line) for an option no task declares."""
    given = given or {}
    unknown = [f"{t}.{o}" for t, opts in given.items() for o in opts
               if o not in (next((k.options for k in list_tasks() if k.name == t), None) or {})]
    if unknown:
        raise ValueError(f"unknown task option {unknown[0]!r}; options: "
                         f"{', '.join(f'{k.name}.{o}' for k in list_tasks() for o in k.options) or 'none'}")
    return {t.name: {**t.options, **dict(given.get(t.name) or {})} for t in list_tasks() if t.options}


def list_tasks() -> list[Task]:
    """Every task: the task folders' in folder order, then plugins' (in registration order)."""
    return list(TASKS.values())  # ranked by the module of each scorer (benchmark.registries)


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; tasks: {', '.join(TASKS)}")
    return TASKS[name]


def task_of_family(family: str) -> Task | None:
    return next((t for t in TASKS.values() if t.family == family), None)


def tasks_for_suites(families: Mapping[str, str]) -> list[tuple[Task, list[str]]]:
    """(task, its suites) for a run whose suites have ``families`` (suite -> family), in task
    registration order; suites of a family no task scores are left out."""
    out = []
    for task in list_tasks():
        suites = [s for s, f in families.items() if f == task.family]
        if suites:
            out.append((task, suites))
    return out


def check_probe_config(family: str, config: dict) -> None:
    """One-line ValueError when the task of ``family`` cannot score probes built from ``config``."""
    task = task_of_family(family)
    if task is not None and task.check_config is not None:
        task.check_config(config)
