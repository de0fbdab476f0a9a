"""Every registry of the package, by name -> entry: the papers' citations, the scores' metadata,
the probe suites and their default configs, the annotator kinds, the label files, the ITA
variants, the reference-attributes configs, the tasks, the dataset builders and what the evaluate
modules copy; and the one ``register_*`` function of each (imported from here only). The types
of the entries stay beside their code (``benchmark.probes``, ``benchmark.annotate``, ...), which
re-export their registry.

Registration is declared, not a side effect of an import: a task folder's ``task.py`` lists
everything the folder adds in one :class:`Registrations` (``REGISTRATIONS``), as do the
package's own modules with generic entries (label files, annotator kinds...). The loader adds
them, in a declared order: the package's modules (``benchmark.PACKAGE_REGISTRATIONS``), then the
task folders in folder order (``benchmark.tasks.discovery.BUILTIN_ORDER``, then by name), each
folder's entries in the order its ``REGISTRATIONS`` lists them; then plugins, which call
:func:`register_all` or a ``register_*`` function. Every entry keeps that place
(:data:`PACKAGE`, ``(FOLDERS, index)``, :data:`PLUGINS`), so a plugin imported before the loader
ran is still listed last, and importing a folder's module first changes nothing.

The task folders and plugins sit above every registry (they import the registries), so no
registry imports them: the top package (``benchmark/__init__.py``) installs the loader with
:func:`install_loader` when ``benchmark`` is imported, and the command line and the library's
entry points call :func:`benchmark.load_tasks` before they read a registry. A registry read
before that (a library user reading ``SCORE_METADATA`` first) calls the loader itself
(:func:`load`): the dependency points down, the loading still happens.

Standard library only: the lowest layer, imported by every other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any, Callable, TypeVar

__all__ = ["Registry", "install_loader", "load", "PACKAGE", "FOLDERS", "PLUGINS", "Registrations", "register_all",
           "SuiteSpec", "PAPERS", "SCORE_METADATA", "SUITES", "PROBE_CONFIGS", "ANNOTATOR_KINDS", "LABEL_FILES",
           "ITA_VARIANTS", "REFERENCE_CONFIGS", "TASKS", "DatasetBuilderSpec", "DATASET_BUILDERS", "EVALUATE_MODULES",
           "EvaluateModuleSpec", "HumanLabelSourceSpec", "HUMAN_LABEL_SOURCES", "register_paper", "register_score", "register_suite", "register_probe_config",
           "register_annotator", "register_label_file", "register_ita_variant", "register_reference_config",
           "register_task", "register_dataset_builder", "register_evaluate_module"]

V = TypeVar("V")

_loader: Callable[[], None] | None = None
_started = False  # the loader is running, or ran and failed
_done = False
# Held while the loader runs: another thread reading a registry meanwhile (two queue workers in
# one process) waits for the whole load instead of reading half-filled registries. Re-entrant
# because a task folder being imported may read a registry (it gets what is registered so far).
_loading = threading.RLock()

#: Where an entry is listed (its place, then the order of registration): the package's generic
#: entries, then the task folders' (``(FOLDERS, index of the folder)``), then plugins'.
PACKAGE: tuple[int, ...] = (0,)
FOLDERS = 1
PLUGINS: tuple[int, ...] = (2,)


def install_loader(loader: Callable[[], None]) -> None:
    """Name the function that imports the task folders and plugins (the top package's)."""
    global _loader
    _loader = loader


def load() -> None:
    """Run the installed loader once: later calls return at once, another thread's call waits
    until it is done, and a call made by the loader itself (a folder reading a registry) gets
    what is registered so far."""
    global _started, _done
    if _done:
        return
    with _loading:
        if _done or _started or _loader is None:
            return
        _started = True
        _loader()
        _done = True


class Registry(MutableMapping[str, V]):
    """A name -> entry mapping filled by the task folders and plugins.

    Reading it (a lookup, ``in``, iteration, ``len``) first runs the loader (:func:`load`);
    entries are listed by their declared place (:data:`PACKAGE`, a task folder's, :data:`PLUGINS`),
    registration order breaking ties. Registering never loads (:meth:`registered` reads without
    loading).
    """

    def __init__(self, what: str):
        self.what = what  # "score", "paper": for messages
        self._entries: dict[str, V] = {}
        self._place: dict[str, tuple[int, ...]] = {}  # name -> where it is listed
        self._ordered = True

    def register(self, name: str, entry: V, place: tuple[int, ...] = PLUGINS) -> V:
        self._place.setdefault(name, place)  # a re-registration keeps its place
        self._ordered = self._ordered and name in self._entries
        self._entries[name] = entry
        return entry

    def registered(self, name: str) -> V | None:
        """The entry registered as ``name`` so far (None), without loading the task folders."""
        return self._entries.get(name)

    def place(self, name: str) -> tuple[int, ...]:
        """Where entry ``name`` is listed (:data:`PACKAGE`, a task folder's ``(FOLDERS, index)``,
        :data:`PLUGINS`): entries declared by one folder share it."""
        self._ready()
        return self._place[name]

    def so_far(self) -> dict[str, V]:
        """The entries registered so far, without loading the task folders."""
        return dict(self._entries)

    def _ready(self) -> dict[str, V]:
        load()
        if not self._ordered:
            self._ordered = True
            self._entries = dict(sorted(self._entries.items(), key=lambda kv: self._place[kv[0]]))
        return self._entries

    def __getitem__(self, name: str) -> V:
        return self._ready()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._ready()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ready())

    def __len__(self) -> int:
        return len(self._ready())

    def __setitem__(self, name: str, entry: V) -> None:
        self.register(name, entry, self._place.get(name, PLUGINS))

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
        del self._place[name]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.what}: {', '.join(self)})"


@dataclass(frozen=True)
class SuiteSpec:
    """What a suite is: its name, family (config file), paper, and builder
    (``build(config) -> pandas.DataFrame``, :mod:`benchmark.probes.registry`)."""

    name: str
    family: str
    paper: str
    summary: str
    build: Callable[[dict], Any]
    # Markdown for the dataset card: what the suite is and the choices made where
    # the paper is silent.
    card: str = ""
    expected_rows: int | None = None  # with the default config
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "card", self.card.strip())


@dataclass(frozen=True)
class DatasetBuilderSpec:
    """A dataset builder (``python -m dataset_builders NAME``): its name, a one-line description
    and the module that builds the dataset, which has ``add_arguments(parser)`` (its command-line
    options) and ``run(args) -> exit status``. The module is imported when the builder runs, not
    when it is registered: listing the builders (and loading the task folders) imports no
    dataset library."""

    name: str
    description: str
    module: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "description", " ".join(self.description.split()))  # one line

    def add_arguments(self, parser: Any) -> None:
        import_module(self.module).add_arguments(parser)

    def run(self, args: Any) -> int:
        return import_module(self.module).run(args)


@dataclass(frozen=True)
class HumanLabelSourceSpec:
    """Where the score stage finds people's labels of a run folder to correct its scores with:
    ``module`` has ``human_labels(run_dir)``, returning
    :class:`benchmark.runner.human_correction.HumanLabels` or None (no labels). The module sits
    above the runner (it reads the annotation app's answers), so it is named here and imported when
    a run is scored, as a dataset builder's is."""

    name: str
    description: str
    module: str

    def read(self, run_dir: Any) -> Any:
        return import_module(self.module).human_labels(run_dir)


@dataclass(frozen=True)
class EvaluateModuleSpec:
    """What ``metrics/<name>/<name>.py``'s hand-written part uses from the package: ``copies``,
    "module:name" of the functions, classes and constants ``metrics/inline_scores.py`` copies into
    the script (with what they use), and ``imports``, the lines the hand-written part needs itself.
    ``inputs``, ``keywords``, ``outputs`` and ``cites`` are its row of the README's table of
    modules (Markdown: the inputs per row, the keyword arguments, the main outputs, where the
    paper defines it)."""

    name: str
    copies: tuple[str, ...]
    imports: tuple[str, ...] = ("import datasets", "import evaluate")
    inputs: str = ""
    keywords: str = ""
    outputs: str = ""
    cites: str = ""


PAPERS: Registry = Registry("paper")  # key -> benchmark.papers.Paper
SCORE_METADATA: Registry = Registry("score")  # name -> benchmark.scores.metadata.ScoreMetadata
SUITES: Registry[SuiteSpec] = Registry("suite")
PROBE_CONFIGS: Registry[Path] = Registry("probe config")  # probe family -> its default YAML file
ANNOTATOR_KINDS: Registry = Registry("annotator kind")  # name -> benchmark.annotate.kinds.AnnotatorKind
LABEL_FILES: Registry = Registry("label file")  # name -> benchmark.annotate.label_files.LabelFile
ITA_VARIANTS: Registry = Registry("ITA variant")  # name -> benchmark.annotate.skin_tone.ItaVariant
REFERENCE_CONFIGS: Registry = Registry("reference config")  # name -> benchmark.reference_attributes.ReferenceConfig
TASKS: Registry = Registry("task")  # name -> benchmark.tasks.registry.Task
DATASET_BUILDERS: Registry[DatasetBuilderSpec] = Registry("dataset builder")
EVALUATE_MODULES: Registry[EvaluateModuleSpec] = Registry("evaluate module")  # metrics/<name>/ -> what it copies
HUMAN_LABEL_SOURCES: Registry[HumanLabelSourceSpec] = Registry("human label source")


# --------------------------------------------------------------------------- declared registrations


@dataclass(frozen=True)
class Registrations:
    """Everything one task folder (its ``task.py``'s ``REGISTRATIONS``), one module of the package
    or one plugin adds to the registries, each kind in the order listed: papers
    (:class:`benchmark.papers.Paper`), scores (:class:`benchmark.scores.metadata.ScoreMetadata`),
    probe configs (family -> default YAML file), suites, annotator kinds
    (:class:`benchmark.annotate.kinds.AnnotatorKind`), label files, ITA variants, reference-attributes
    configs, dataset builders, evaluate modules, tasks (:class:`benchmark.tasks.registry.Task`) and
    sources of people's labels (:class:`HumanLabelSourceSpec`).
    Declaring adds nothing: :func:`register_all` does (the loader, for the folders)."""

    papers: tuple = ()
    scores: tuple = ()
    probe_configs: Mapping[str, Path] = field(default_factory=dict)
    suites: tuple[SuiteSpec, ...] = ()
    annotators: tuple = ()
    label_files: tuple = ()
    ita_variants: tuple = ()
    reference_configs: tuple = ()
    dataset_builders: tuple[DatasetBuilderSpec, ...] = ()
    evaluate_modules: tuple[EvaluateModuleSpec, ...] = ()
    tasks: tuple = ()
    human_label_sources: tuple[HumanLabelSourceSpec, ...] = ()


def register_all(registrations: Registrations, place: tuple[int, ...] = PLUGINS) -> Registrations:
    """Add every entry ``registrations`` declares, listed at ``place`` (the loader gives the
    package's modules :data:`PACKAGE` and each task folder ``(FOLDERS, index)``; a plugin's are
    listed last). The checks of each ``register_*`` function apply."""
    r = registrations
    adders: tuple[tuple[Iterable, Callable[[Any, tuple[int, ...]], Any]], ...] = (
        (r.papers, _add_paper), (r.scores, _add_score), (r.probe_configs.items(), _add_probe_config),
        (r.suites, _add_suite), (r.annotators, _add_annotator), (r.label_files, _add_label_file),
        (r.ita_variants, _add_ita_variant), (r.reference_configs, _add_reference_config),
        (r.dataset_builders, _add_dataset_builder), (r.evaluate_modules, _add_evaluate_module), (r.tasks, _add_task),
        (r.human_label_sources, _add_human_label_source))
    for entries, add in adders:
        for entry in entries:
            add(entry, place)
    return registrations


def _unique(registry: Registry, message: str, key: str = "name") -> Callable[[Any, tuple[int, ...]], Any]:
    """The adder of ``registry``: an entry under its ``key`` attribute, refused with ``message``
    (formatted with ``name``) when that name holds another entry; the same entry again is a no-op."""

    def add(entry: Any, place: tuple[int, ...]) -> Any:
        name = getattr(entry, key)
        if registry.registered(name) not in (None, entry):
            raise ValueError(message.format(name=name))
        return registry.register(name, entry, place)

    return add


_add_paper = _unique(PAPERS, "paper {name!r} is already cited differently", key="key")
_add_suite = _unique(SUITES, "suite {name!r} is registered twice")
_add_annotator = _unique(ANNOTATOR_KINDS, "annotator kind {name!r} is registered twice")
_add_ita_variant = _unique(ITA_VARIANTS, "ITA variant {name!r} is registered twice")
_add_reference_config = _unique(REFERENCE_CONFIGS, "reference config {name!r} is declared twice")
_add_dataset_builder = _unique(DATASET_BUILDERS, "dataset builder {name!r} is registered twice")
_add_human_label_source = _unique(HUMAN_LABEL_SOURCES, "human label source {name!r} is registered twice")
_add_unique_score = _unique(SCORE_METADATA, "score {name!r} already has other metadata")
_add_unique_label_file = _unique(LABEL_FILES, "label file {name!r} is registered twice with different columns")
_add_unique_task = _unique(TASKS, "task {name!r} is registered twice")


def _add_score(meta: Any, place: tuple[int, ...]) -> Any:
    if SCORE_METADATA.registered(meta.name) in (None, meta) and meta.min_value > meta.max_value:
        raise ValueError(f"score {meta.name!r}: min {meta.min_value} > max {meta.max_value}")
    return _add_unique_score(meta, place)


def _add_probe_config(family_path: tuple[str, str | Path], place: tuple[int, ...]) -> Path:
    family, path = family_path
    return PROBE_CONFIGS.register(family, Path(path), place)


def _add_label_file(spec: Any, place: tuple[int, ...]) -> Any:
    missing = [c for c in spec.key if c not in spec.columns]
    if LABEL_FILES.registered(spec.name) in (None, spec) and missing:
        raise ValueError(f"label file {spec.name!r}: key columns {missing} are not among its columns")
    return _add_unique_label_file(spec, place)


def _add_evaluate_module(spec: EvaluateModuleSpec, place: tuple[int, ...]) -> EvaluateModuleSpec:
    """A module several folders serve (one that cites several papers) is declared by each: the
    copies, imports and citations are joined, the first declaration's inputs, keywords and
    outputs kept, and it keeps the place of its first declaration."""
    old = EVALUATE_MODULES.registered(spec.name)
    if old is not None:
        spec = EvaluateModuleSpec(spec.name, tuple(dict.fromkeys(old.copies + spec.copies)),
                                  tuple(dict.fromkeys(old.imports + spec.imports)),
                                  old.inputs or spec.inputs, old.keywords or spec.keywords, old.outputs or spec.outputs,
                                  "; ".join(c for c in dict.fromkeys((old.cites, spec.cites)) if c))
    return EVALUATE_MODULES.register(spec.name, spec, place)


def _add_task(task: Any, place: tuple[int, ...]) -> Any:
    other = [name for name, t in TASKS.so_far().items() if t.family == task.family and name != task.name]
    if TASKS.registered(task.name) in (None, task) and other:
        raise ValueError(f"probe family {task.family!r} is already scored by task {other[0]!r}")
    return _add_unique_task(task, place)


# --------------------------------------------------------------------------- one entry at a time (plugins)


def register_paper(paper: Any) -> Any:
    """Add a paper's citation (a plugin's; a task folder declares its own in ``REGISTRATIONS``)."""
    return _add_paper(paper, PLUGINS)


def register_score(meta: Any) -> Any:
    """Add a score's metadata; a score cannot be redefined."""
    return _add_score(meta, PLUGINS)


def register_suite(
    name: str, *, family: str, paper: str, summary: str, card: str = "", expected_rows: int | None = None
) -> Callable[[Callable[[dict], Any]], Callable[[dict], Any]]:
    """Decorator registering ``build(config) -> DataFrame`` as suite ``name``."""

    def wrap(fn: Callable[[dict], Any]) -> Callable[[dict], Any]:
        _add_suite(SuiteSpec(name=name, family=family, paper=paper, summary=summary, build=fn, card=card,
                             expected_rows=expected_rows), PLUGINS)
        return fn

    return wrap


def register_probe_config(family: str, path: str | Path) -> Path:
    """Name ``path`` as the default config of probe family ``family``."""
    return _add_probe_config((family, path), PLUGINS)


def register_annotator(kind: Any) -> Any:
    """Add an annotator kind (:class:`benchmark.annotate.kinds.AnnotatorKind`)."""
    return _add_annotator(kind, PLUGINS)


def register_label_file(spec: Any) -> Any:
    """Add a label file (a new annotator's output); registering the same spec twice is a no-op."""
    return _add_label_file(spec, PLUGINS)


def register_ita_variant(variant: Any) -> Any:
    """Add an ITA variant (:class:`benchmark.annotate.skin_tone.ItaVariant`)."""
    return _add_ita_variant(variant, PLUGINS)


def register_reference_config(config: Any) -> Any:
    """Declare a config to the reference-attributes reader (in the order the configs are read and listed)."""
    return _add_reference_config(config, PLUGINS)


def register_task(task: Any) -> Any:
    """Add a task (:class:`benchmark.tasks.registry.Task`); one task per probe family."""
    return _add_task(task, PLUGINS)


def register_dataset_builder(name: str, description: str, module: str) -> DatasetBuilderSpec:
    """Declare a dataset builder (``python -m dataset_builders NAME``): ``module`` (imported when
    the builder runs) has ``add_arguments(parser)`` and ``run(args) -> exit status``;
    ``description`` is one line (``python -m dataset_builders --list`` and the builder's help)."""
    return _add_dataset_builder(DatasetBuilderSpec(name, description, module), PLUGINS)


def register_evaluate_module(name: str, copies: tuple[str, ...] | list[str],
                             imports: tuple[str, ...] | list[str] = ("import datasets", "import evaluate")) -> EvaluateModuleSpec:
    """Declare what evaluate module ``name`` copies; a module declared again joins the copies."""
    return _add_evaluate_module(EvaluateModuleSpec(name, tuple(copies), tuple(imports)), PLUGINS)
