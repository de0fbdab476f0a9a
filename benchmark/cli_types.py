"""Option value types of the command line: each value is checked while the arguments are
parsed, so a bad number, path or format is one line on stderr before anything loads. Also
where the task folders' own commands are found (:func:`task_command_modules`).

Standard library only: ``t2ibench --help`` and every usage error must stay fast in the
base install (no pandas, scipy, scikit-learn, datasets or torch).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from types import ModuleType

#: the value ``--batch-size`` / ``--batch_size`` accepts besides a positive number
AUTO = "auto"


#: how every command's one error line starts
ERROR_PREFIX = "t2ibench: error: "


def error_line(message: object) -> str:
    """``t2ibench: error: message`` on one line (line breaks in the message become spaces)."""
    return ERROR_PREFIX + re.sub(r"\s*\n\s*", " ", str(message).strip())


def print_error(message: object, file=None) -> None:
    print(error_line(message), file=file or sys.stderr)


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help that shows each option's default, unless there is none (None, False) or the help
    text already says what it is ("default: ...")."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        if action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            text += " (default: %(default)s)"
        return text


class SubcommandsAction(argparse._SubParsersAction):
    """Subcommands whose ``--help`` opens with a description: the one-line help of the
    command list when the command gives none of its own."""

    def add_parser(self, name: str, **kwargs):
        if kwargs.get("help") and not kwargs.get("description"):
            text = str(kwargs["help"])
            kwargs["description"] = text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
        return super().add_parser(name, **kwargs)


class RawDescriptionDefaultsHelpFormatter(DefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown, description and epilog kept as written (a command whose epilog is a table)."""


class CommandLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr, exit status 2, and whose
    help shows every option's default. Subparsers inherit the class."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", SubcommandsAction)

    def error(self, message: str):  # noqa: D102 (argparse's hook)
        print(f"{self.prog}: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def positive_int(raw: str) -> int:
    """An integer >= 1 (limits, counts)."""
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def whole_number(low: int, high: int, why: str = ""):
    """The type of a whole number from ``low`` to ``high`` (``why``: what the upper bound is,
    said when a value passes it)."""
    def parse(raw: str) -> int:
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low:,} to {high:,}, got {raw!r}") from None
        if not low <= value <= high:
            shown = f"{value:,}" if len(str(value)) <= 30 else f"a {len(str(abs(value)))}-digit number"
            raise argparse.ArgumentTypeError(f"expected a whole number from {low:,} to {high:,}{why and f' ({why})'}, "
                                             f"got {shown}")
        return value

    parse.__name__ = f"whole_number_{low}_{high}"
    return parse


def number_between(low: float, high: float, what: str = "a number", why: str = ""):
    """The type of a finite number from ``low`` to ``high`` (nan, inf and 1e300 are refused: they
    would overflow a sleep, a timer or an optimiser); ``what`` names it in the message."""
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {raw!r}") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"expected {what} from {low:g} to {high:,g}{why and f' ({why})'}, "
                                             f"got {raw!r}")
        return value

    parse.__name__ = f"number_{low:g}_{high:g}"
    return parse


def seconds(low: float, high: float, why: str = ""):
    """The type of a duration: a finite number of seconds from ``low`` to ``high``."""
    return number_between(low, high, "a number of seconds", why)


#: ``--lr``: a learning rate, positive and at most 1
learning_rate = number_between(1e-12, 1.0, "a learning rate")


#: the largest ``--batch-size``: 128 times the most ``auto`` ever picks (32, the GPU memory
#: probe's ceiling); 4,096 images of 512 x 512 px are 3 GiB of pixels before any activation,
#: more than any accelerator holds for one diffusion batch, and a number past it is a typo
#: (24 digits ran a whole audit and then failed to write its results)
MAX_BATCH_SIZE = 4096
#: the most bootstrap resamples per interval: a hundred times the papers' usual 1,000; the
#: score stage calls a statistic once per resample per entry and scipy holds resamples x images
#: indices in memory, so 10**9 ran out of memory instead of being refused
MAX_RESAMPLES = 100_000
#: random seeds (numpy, scipy and torch generators take them)
MAX_SEED = 2**32 - 1

#: ``--n-resamples``: bootstrap resamples per interval, 1 to :data:`MAX_RESAMPLES`
n_resamples = whole_number(1, MAX_RESAMPLES)
#: ``--seed``: a random seed, 0 to :data:`MAX_SEED`
seed = whole_number(0, MAX_SEED)


class BatchSizeError(ValueError, argparse.ArgumentTypeError):
    """A bad batch size: a one-line ValueError to the library, a message argparse shows as it is."""


def batch_size(value: object) -> int | str:
    """A whole number from 1 to :data:`MAX_BATCH_SIZE` or ``auto`` (the spelling lm-evaluation-harness
    users type): the one reading of ``--batch-size``, and of a batch size given to the runner
    (:func:`benchmark.runner.batch_size.resolve_batch_size`)."""
    text = str(value).strip().lower()
    if text == AUTO:
        return AUTO
    if isinstance(value, bool) or not text.isdigit() or int(text) < 1:
        raise BatchSizeError(f"batch size: expected a whole number >= 1 or 'auto', got {value!r}")
    if int(text) > MAX_BATCH_SIZE:
        shown = text if len(text) <= 12 else f"a {len(text)}-digit number"
        raise BatchSizeError(f"batch size: at most {MAX_BATCH_SIZE:,} images per batch (more than any accelerator "
                             f"holds; 'auto' picks at most 32), got {shown}")
    return int(text)


#: the most LoRAs one audit applies (queue requests cap them so too: submissions.requests)
MAX_LORAS = 4
#: the LoRA scales accepted: a card recommends 0.5 to 1.5, slider LoRAs go negative; past 10 the
#: fused weights leave anything a card describes (1e30 made every image black, issue 51)
LORA_SCALE_RANGE = (-10.0, 10.0)
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf")


class WeightsReferenceError(ValueError, argparse.ArgumentTypeError):
    """A bad ``--lora`` / ``--unet`` text: a one-line ValueError to the library, as argparse shows it."""


def _scale_part(text: str) -> str | None:
    """The text after the last ``:`` of a weights reference when it is meant as a scale (module
    benchmark.models.weights_ref: a Hub ID never holds ``:``), None when there is none: no ``:``, the
    whole text an existing path, or the part after it a path piece (a folder, a weights file)."""
    text = text.strip()
    if ":" not in text or os.path.exists(os.path.expanduser(text)):
        return None
    left, right = text.rsplit(":", 1)
    if not left or (len(left) == 1 and left.isalpha() and right[:1] in ("/", "\\")):  # C:\ on Windows
        return None
    if "/" in right or "\\" in right or right.lower().endswith(_WEIGHT_SUFFIXES):
        return None
    return right


def lora_reference(raw: str) -> str:
    """``--lora PATH_OR_HUB_ID[:SCALE]``: the scale, when one is written, a finite number in
    :data:`LORA_SCALE_RANGE` (``X:nan``, ``X:inf``, ``X:abc``, ``X:1e308`` are refused naming the
    scale, before anything looks for ``X``); returns the text as given."""
    scale = _scale_part(str(raw))
    if scale is None:
        return raw
    low, high = LORA_SCALE_RANGE
    try:
        value = float(scale)
    except ValueError:
        raise WeightsReferenceError(f"LoRA {raw!r}: its scale {scale!r} is not a number (PATH_OR_HUB_ID[:SCALE], "
                                    f"SCALE from {low:g} to {high:g})") from None
    if not math.isfinite(value):
        raise WeightsReferenceError(f"LoRA {raw!r}: its scale {scale} is not a finite number (SCALE from {low:g} "
                                    f"to {high:g})")
    if not low <= value <= high:
        raise WeightsReferenceError(f"LoRA {raw!r}: its scale {scale} is outside {low:g} to {high:g} (a card "
                                    "recommends about 0.5 to 1.5)")
    return raw


def unet_reference(raw: str) -> str:
    """``--unet PATH_OR_HUB_ID``: no scale (a checkpoint replaces the base's component whole); a
    text ending in ``:SCALE`` is refused naming it; returns the text as given."""
    scale = _scale_part(str(raw))
    if scale is not None:
        raise WeightsReferenceError(f"--unet {raw!r}: a component checkpoint takes no scale ({scale!r}): it "
                                    "replaces the base's UNet whole; give PATH_OR_HUB_ID alone")
    return raw


def port(raw: str) -> int:
    value = positive_int(raw)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port between 1 and 65535, got {value}")
    return value


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(path.anchor or ".")


#: what makes a folder a run folder (:data:`benchmark.contract.run_folder.CONFIG_FILE`, spelled
#: here so that parsing loads no pandas; a test checks they agree)
RUN_FOLDER_MARK = "run_config.json"


def run_folder_around(path: str | Path) -> Path | None:
    """The run folder ``path`` is or lies inside, symlinks followed (the nearest folder at or
    above it holding ``run_config.json``); None when there is none."""
    try:
        resolved = Path(path).expanduser().resolve()
    except (OSError, RuntimeError):  # a symlink loop: not a run folder's path
        return None
    for candidate in (resolved, *resolved.parents):
        if (candidate / RUN_FOLDER_MARK).is_file():
            return candidate
    return None


def _not_in_a_run(raw: str, *, own_run: bool = False) -> None:
    """Refuse an output path that is a run folder or lies inside one: a run's files (images,
    labels, results...) are written only by the stages that own them. ``own_run``: ``raw`` is the
    run folder of a command that makes runs (``run``, ``generate``, ``demo``), so only a run
    folder above it is refused."""
    run = run_folder_around(raw)
    if run is None:
        return
    inside = run != Path(raw).expanduser().resolve()
    if own_run and not inside:
        return
    where = f"inside the run folder {run}" if inside else "a run folder (it holds run_config.json)"
    raise argparse.ArgumentTypeError(f"{raw} is {where}: a run's files are written only by the stage that owns "
                                     "them (t2ibench run / annotate / score / report); choose a path outside it")


def _creatable_folder(raw: str) -> str:
    if not raw.strip():
        raise argparse.ArgumentTypeError("expected a folder path, got an empty string")
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{raw} is a file, not a folder")
    base = _nearest_existing(path.absolute())
    if not base.is_dir():
        raise argparse.ArgumentTypeError(f"{raw}: {base} is a file, so no folder can be made under it")
    if base == path.absolute() and os.access(base, os.W_OK):
        return raw
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".t2ibench-check-", dir=base))
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot create {raw}: {exc.strerror or exc} in {base}") from None
    return raw


def output_folder(raw: str) -> str:
    """A folder the command may create or fill: not an existing file, its nearest existing
    parent a folder where a folder can be made (tried with a temporary one, removed at once,
    so nothing is left behind when the command is refused later), and neither a run folder nor
    inside one (:func:`run_folder_around`)."""
    _creatable_folder(raw)
    _not_in_a_run(raw)
    return raw


def run_folder_out(raw: str) -> str:
    """The run folder of ``run``, ``generate`` and ``demo``: an :func:`output_folder` that may
    be a run folder already (rerun to resume), but not a folder inside another run."""
    _creatable_folder(raw)
    _not_in_a_run(raw, own_run=True)
    return raw


def output_file(raw: str) -> str:
    """A file the command may write: not an existing folder, not inside a run folder (its files
    are the stages'), and the folder it goes in one that exists or can be made
    (:func:`output_folder`), so ``--out /proc/sheet.csv`` is one line."""
    if not raw.strip():
        raise argparse.ArgumentTypeError("expected a file path, got an empty string")
    path = Path(raw).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{raw} is a folder, not a file")
    _not_in_a_run(raw)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        _creatable_folder(str(parent))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"cannot write {raw}: {exc}") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {raw}: it exists and is not writable")
    if parent.is_dir():  # tried with a temporary file, removed at once (os.access is not enough for root)
        try:
            with tempfile.NamedTemporaryFile(prefix=".t2ibench-check-", dir=parent):
                pass
        except OSError as exc:
            raise argparse.ArgumentTypeError(f"cannot write {raw}: {exc.strerror or exc} in {parent}") from None
    return raw


#: the longest paper key ``t2ibench new-task`` takes: its suite and score (``NAME_people``,
#: ``NAME_darker_share``) become Hub dataset config names, file names and leaderboard columns
#: (a 300-character name failed writing the folder with a traceback)
MAX_TASK_NAME = 40
_TASK_NAME = re.compile(r"[a-z][a-z0-9_]*")


def task_name(raw: str) -> str:
    """A new paper's key (``t2ibench new-task NAME``): a lowercase Python identifier (its folder is
    a package, its name a probe family, task and paper) of at most :data:`MAX_TASK_NAME`
    characters. Whether it is free is the registries' to say
    (:func:`benchmark.tasks.scaffold.check_new_task`)."""
    import keyword

    shown = raw if len(raw) <= 60 else f"{raw[:40]}... ({len(raw)} characters)"
    if not _TASK_NAME.fullmatch(raw) or keyword.iskeyword(raw):
        raise argparse.ArgumentTypeError(f"{shown!r} is not a lowercase Python identifier (a letter, then letters, "
                                         "digits or _), e.g. toy")
    if len(raw) > MAX_TASK_NAME:
        raise argparse.ArgumentTypeError(f"{shown!r} is longer than {MAX_TASK_NAME} characters (its suite and score "
                                         "names become file names and leaderboard columns)")
    return raw


def existing_folder(raw: str) -> str:
    if not Path(raw).is_dir():
        raise argparse.ArgumentTypeError(f"{raw} is not a folder" if Path(raw).exists() else f"no such folder {raw}")
    return raw


def existing_file(raw: str) -> str:
    if not Path(raw).is_file():
        raise argparse.ArgumentTypeError(f"{raw} is not a file" if Path(raw).exists() else f"no such file {raw}")
    return raw


#: a results file read at parse time (``--pilot``) is at most this large (contract.results reads
#: it again, bounded the same, and validates it)
RESULTS_FILE_BYTES = 16 * 1024 * 1024


def results_file(raw: str) -> str:
    """An existing results.json: a JSON object with ``schema_version``, ``suites`` and ``scores``,
    read here with the standard library only, so that a garbage file is refused in one line
    before any heavy library loads (the run validates it in full later)."""
    existing_file(raw)
    size = Path(raw).stat().st_size
    if size > RESULTS_FILE_BYTES:
        raise argparse.ArgumentTypeError(f"{raw} is {size:,} bytes: no results file is that large")
    try:
        doc = json.loads(Path(raw).read_bytes())
    except (ValueError, RecursionError, OSError) as exc:
        raise argparse.ArgumentTypeError(f"{raw} is not a results file: not JSON ({type(exc).__name__})") from None
    if not isinstance(doc, dict) or not all(k in doc for k in ("schema_version", "suites", "scores")):
        raise argparse.ArgumentTypeError(f"{raw} is not a results file: a JSON object with schema_version, suites and "
                                         "scores (what `t2ibench score` writes)")
    return raw


def comma_list(raw: str) -> list[str]:
    """``a,b`` or ``a`` -> names (the lm-evaluation-harness ``--tasks`` spelling)."""
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected names separated by commas, got {raw!r}")
    return names


def model_args(raw: str) -> list[str]:
    """``key=value,key=value`` (lm-evaluation-harness ``--model_args``) -> ``KEY=VALUE`` items for ``--set``."""
    items = [i.strip() for i in raw.split(",") if i.strip()]
    bad = [i for i in items if "=" not in i or not i.partition("=")[0].strip()]
    if not items or bad:
        raise argparse.ArgumentTypeError(f"expected key=value[,key=value...], got {raw!r}")
    return items


class ExtendFlat(argparse.Action):
    """Append a list value to the destination list (``--tasks a,b --tasks c`` -> [a, b, c]). Every
    option sharing the destination uses it (``--suites`` and ``--tasks``), so ``--tasks X --suites Y``
    and ``--suites Y --tasks X`` both keep X and Y; a name given twice is kept once."""

    def __call__(self, parser, namespace, values, option_string=None):
        current = list(getattr(namespace, self.dest, None) or [])
        current.extend(v for v in (values if isinstance(values, list) else [values]) if v not in current)
        setattr(namespace, self.dest, current)


#: ``--dtype`` spellings (benchmark.models.device resolves them; a test checks the two agree)
DTYPE_NAMES = ("float32", "fp32", "float", "float16", "fp16", "half", "bfloat16", "bf16")
_DEVICE = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")


def dtype(raw: str) -> str:
    if raw.strip().lower() not in DTYPE_NAMES:
        raise argparse.ArgumentTypeError(f"unknown dtype {raw!r}: use float32, float16 or bfloat16")
    return raw.strip().lower()


def device(raw: str) -> str:
    """``cpu``, ``cuda``, ``cuda:N`` or ``mps`` (whether it is present is checked before the model loads)."""
    if not _DEVICE.match(raw.strip()):
        raise argparse.ArgumentTypeError(f"unknown device {raw!r}: use cpu, cuda, cuda:N or mps")
    return raw.strip()


#: more folders holding task folders (``os.pathsep``-separated), e.g. a paper being written
#: (read by :mod:`benchmark.tasks.discovery` too)
TASKS_PATH_ENV = "T2IBENCH_TASKS_PATH"
#: the module of a task folder that adds its own commands: ``register(subparsers)``
TASK_COMMANDS = "cli"


def task_search_path() -> list[str]:
    """The folders holding task folders: ``benchmark/tasks/`` and those of ``$T2IBENCH_TASKS_PATH``."""
    spec = importlib.util.find_spec("benchmark.tasks")  # imports ``benchmark`` only, not the tasks
    paths = list(spec.submodule_search_locations or []) if spec else []
    return paths + [p for p in os.environ.get(TASKS_PATH_ENV, "").split(os.pathsep) if p and p not in paths]


def task_command_modules() -> list[ModuleType]:
    """The ``cli.py`` of every task folder that has one (folders by name, ``benchmark/tasks/``
    first), each read from its file without importing its task folder: a task folder's
    package loads its probes and scorer (pandas), and ``t2ibench --help`` must stay light. So
    such a module imports the standard library only (no relative import) and names its
    commands' bodies as ``"package.module:function"``, imported when the command runs."""
    modules, seen = [], set()
    for base in task_search_path():
        folders = sorted(p for p in Path(base).glob(f"*/{TASK_COMMANDS}.py") if (p.parent / "__init__.py").is_file())
        for path in folders:
            if path.parent.name in seen:
                continue  # the first folder of a name is the one `import benchmark.tasks.<name>` finds
            seen.add(path.parent.name)
            spec = importlib.util.spec_from_file_location(f"benchmark.tasks.{path.parent.name}.{TASK_COMMANDS}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            modules.append(module)
    return modules
