"""Run inputs a task declares: a dataset a paper's scores may be computed against instead of
what the run generates (MCAS's reference attribute images, ``--mcas-reference``).

A task folder declares its inputs in its light ``inputs.py`` (``INPUTS = (TaskInput(...),)``;
:func:`benchmark.tasks.discovery.folder_declarations`). From the declarations:

* the command line generates the options of ``run`` and ``generate`` (``--<name>`` and, when
  the input has a revision, ``--<name>-revision``);
* the runner plans each input before the first image (:func:`plan_inputs`: the folder's
  ``plan`` function loads and checks it, refuses a run folder started with another one, and
  drops the suites it replaces) and records its identity in run_config.json under its
  ``name``;
* results.json records it under ``references[results_key]`` (:func:`results_references`), and
  the plan, the report and the leaderboard describe it in the declared words.

This module imports nothing heavy: ``t2ibench --help`` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable, Mapping, Sequence

from benchmark.tasks.discovery import folder_declarations

__all__ = ["TaskInput", "declared_inputs", "input_of_results_key", "describe_identity", "run_identity",
           "results_references", "plan_inputs", "PlannedInputs"]


def describe_identity(identity: Mapping) -> str:
    """``SOURCE @ REVISION (fingerprint abcdef123456)`` of a recorded input."""
    at = f" @ {identity['revision']}" if identity.get("revision") else ""
    return f"{identity.get('source')}{at} (fingerprint {str(identity.get('fingerprint'))[:12]})"


@dataclass(frozen=True)
class TaskInput:
    """A dataset a run may be scored against (see the module docstring).

    ``name``: the option's name (``--<name>`` with ``-`` for ``_``) and the run_config.json key
    of the identity it records (``{source, revision, fingerprint}``); ``results_key``: its key in
    results.json's ``references``; ``plan``: ``"module:function"`` called as ``plan(run_dir,
    probe_set, suites, source, revision) -> (suites to generate, identity or None)`` (imported
    when a run plans it); ``revision_help``: the help of ``--<name>-revision`` (None: no such
    option). The words: ``label`` names it ("MCAS reference"), ``what`` is what it replaces
    ("attribute images"), ``scored`` the scores computed against it, ``compare`` the scores
    the report says to compare only within one fingerprint. ``family``: the probe family whose
    suites it replaces (the leaderboard ranks the scores of that family's task only against the
    same fingerprint).
    """

    name: str
    results_key: str
    plan: str
    help: str
    revision_help: str | None = None
    metavar: str = "SOURCE"
    label: str = ""
    what: str = "images"
    scored: str = ""
    compare: str = ""
    family: str = ""

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def revision_name(self) -> str | None:
        return f"{self.name}_revision" if self.revision_help is not None else None

    @property
    def names(self) -> tuple[str, ...]:
        """The keyword arguments (and argparse destinations) this input takes."""
        return (self.name,) + ((self.revision_name,) if self.revision_name else ())

    @property
    def title(self) -> str:
        return self.label or f"{self.results_key.upper()} reference"

    @property
    def badge(self) -> str:
        """The leaderboard badge of a row scored against it (a CSS class name too)."""
        return f"{self.results_key}-ref"

    @property
    def short_label(self) -> str:
        """What the leaderboard's Model cell adds before the fingerprint."""
        return f"{self.results_key.upper()} ref"

    def planner(self) -> Callable[..., tuple[list[str], dict | None]]:
        module, _, function = self.plan.partition(":")
        return getattr(import_module(module), function)

    # the words the plan, the generation stage, the report and the leaderboard use
    def plan_text(self, identity: Mapping, replaced: Sequence[str]) -> str:
        return f"{describe_identity(identity)} (replaces {', '.join(replaced) or 'no generated suite'})"

    def replaced_text(self, identity: Mapping, replaced: Sequence[str]) -> str:
        return (f"{self.title} {describe_identity(identity)}: its {self.what} replace suite(s) "
                f"{', '.join(replaced)}, which are not generated")

    def report_text(self, identity: Mapping) -> str:
        return (f"{self.what} from {describe_identity(identity)}, not the model's own: compare {self.compare} only "
                "with audits against the same fingerprint")

    def badge_text(self, identity: Mapping) -> str:
        return (f"{self.scored} scored against the {self.what} of {describe_identity(identity)}, not the model's "
                "own: ranked only with rows of the same reference")

    def detail_text(self, identity: Mapping | None) -> str:
        if identity is None:
            return f"none: the model's own {self.what} (the papers' protocol)"
        return f"{self.what} from {describe_identity(identity)}; ranked only with rows of the same reference"


def declared_inputs() -> list[TaskInput]:
    """Every input the task folders declare, in folder order."""
    return [i for module in folder_declarations() for i in getattr(module, "INPUTS", ())]


def input_of_results_key(key: str) -> TaskInput:
    """The declared input recorded under results.json ``references[key]``; for a key no installed
    folder declares (results of another installation), a plain one named after the key."""
    found = next((i for i in declared_inputs() if i.results_key == key), None)
    return found or TaskInput(name=f"{key}_reference", results_key=key, plan="", help="", scored=key.upper(),
                              compare=key.upper())


def run_identity(run_config: Mapping | None, task_input: TaskInput) -> dict | None:
    """The identity ({source, revision, fingerprint}) ``task_input`` recorded in a run's
    run_config.json, or None when the run was not given it; a one-line ValueError for a
    malformed entry."""
    ref = (run_config or {}).get(task_input.name)
    if ref is None:
        return None
    if not isinstance(ref, dict) or not isinstance(ref.get("fingerprint"), str) or not ref.get("source"):
        raise ValueError(f"run_config.json has a malformed {task_input.name} entry: {ref!r}")
    return {"source": str(ref["source"]), "revision": ref.get("revision"), "fingerprint": ref["fingerprint"]}


def results_references(run_config: Mapping | None) -> dict | None:
    """results.json's ``references`` block: ``{results_key: identity}`` of every input the run was
    given, None (no block) when it was given none."""
    out = {}
    for task_input in declared_inputs():
        identity = run_identity(run_config, task_input)
        if identity is not None:
            out[task_input.results_key] = identity
    return out or None


@dataclass
class PlannedInputs:
    """What :func:`plan_inputs` decided: the suites to generate, the identity of every input given
    (run_config.json key -> identity) and the suites each input replaces."""

    suites: list[str]
    identities: dict[str, dict]
    replaced: dict[str, list[str]]


def plan_inputs(run_dir: Any, probe_set: Any, suites: list[str], given: Mapping[str, Any] | None) -> PlannedInputs:
    """Plan every declared input of a run from ``given`` (keyword -> value, e.g. ``{"<name>":
    SOURCE, "<name>_revision": REV}``; an input not given is planned too, so that resuming a
    folder started with it is refused). A keyword no task declares is a TypeError."""
    given = dict(given or {})
    inputs = declared_inputs()
    unknown = sorted(set(given) - {n for i in inputs for n in i.names})
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r} (task inputs: "
                        f"{', '.join(n for i in inputs for n in i.names) or 'none'})")
    identities: dict[str, dict] = {}
    replaced: dict[str, list[str]] = {}
    for task_input in inputs:
        before = list(suites)
        revision = given.get(task_input.revision_name) if task_input.revision_name else None
        suites, identity = task_input.planner()(run_dir, probe_set, suites, given.get(task_input.name), revision)
        if identity is not None:
            identities[task_input.name] = dict(identity)
            replaced[task_input.name] = [s for s in before if s not in suites]
    return PlannedInputs(list(suites), identities, replaced)
