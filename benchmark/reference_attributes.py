"""Reference attributes: a fixed set of attribute images and texts that audits can score
against, and the Monk Skin Tone swatches, read from a folder written by
``python -m dataset_builders.reference_attributes`` or from that folder pushed to the Hub.

    ref = load_reference_attributes("refs/sd15")                       # a folder
    ref = load_reference_attributes("ORG/NAME", revision="main")       # a Hub dataset
    ref.mst_swatches     # DataFrame: mst 1..10, srgb_*, cielab_*, ita, source, licence, image (PIL)
    ref.config(NAME)     # DataFrame of the config NAME, or None when the dataset lacks it
    ref.require(NAME)    # the same, or a one-line error saying how to build a dataset that has it
    ref.identity         # {source, revision, fingerprint}: what results.json records

The dataset's configs (one parquet split ``train`` each, listed in the card's YAML
``configs:``) are read with pyarrow, not through ``datasets``' cache, so a folder rebuilt
in place is read as it is now. Which configs there are is declared to this reader
(the registry :data:`benchmark.registries.REFERENCE_CONFIGS`: a :class:`ReferenceConfig` gives
the config's name, its columns, whether every reference has it, and the checks and conversions
of its rows) by whoever reads them: this module declares ``mst_swatches`` (the skin-tone
annotator's swatches, read below the tasks) in its ``REGISTRATIONS``; a task folder declares
its own in its ``task.py``, and the registry loads them on its first read. ``fingerprint`` is the sha256 of the data files of the declared
configs (recipe in :func:`data_fingerprint`): two references with the same fingerprint hold the
same rows and images, wherever they were loaded from.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from benchmark.contract.digest import file_sha256, sha256_hex, sha256_hex_chunks
from benchmark.contract.model_specs import hub_id_problem
from benchmark.hub.access import HubError, hub_errors
from benchmark.registries import REFERENCE_CONFIGS, Registrations
from benchmark.scores.skin_tone import swatch_itas

__all__ = ["SPLIT", "MST_SWATCHES", "MST_COLUMNS", "BUILDER", "ReferenceAttributesError", "ReferenceIdentity",
           "ReferenceConfig", "MST_SWATCHES_CONFIG", "REGISTRATIONS", "reference_configs", "ReferenceAttributes",
           "card_configs", "data_fingerprint", "open_image", "read_folder", "load_reference_attributes"]

SPLIT = "train"
MST_SWATCHES = "mst_swatches"
MST_COLUMNS = ("image", "mst", "srgb_hex", "srgb_r", "srgb_g", "srgb_b", "cielab_l", "cielab_a", "cielab_b", "ita",
               "source", "licence")
#: the command that builds a reference-attributes dataset
BUILDER = "python -m dataset_builders.reference_attributes"

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class ReferenceAttributesError(ValueError):
    """A reference that cannot be loaded or used as asked; the message is one line."""


@dataclass(frozen=True)
class ReferenceIdentity:
    """Which reference an audit used: ``source`` (the folder or Hub id as given),
    ``revision`` (the resolved commit for a Hub dataset, None for a folder) and
    ``fingerprint`` (sha256 of the data files)."""

    source: str
    revision: str | None
    fingerprint: str

    def to_dict(self) -> dict:
        return {"source": self.source, "revision": self.revision, "fingerprint": self.fingerprint}


# --------------------------------------------------------------------------- declared configs


@dataclass(frozen=True)
class ReferenceConfig:
    """A config of the dataset, as its reader declares it.

    ``columns``: those every row must have (a dataset lacking one is refused); ``required``:
    every reference has this config (a dataset without it is not a reference-attributes
    dataset), else it is optional (:meth:`ReferenceAttributes.config` gives None);
    ``prepare(frame, where)``: checks and converts the rows read (``where`` is
    ``"<folder>: <name>"`` for messages; a ``ValueError`` becomes a one-line
    :class:`ReferenceAttributesError` prefixed with it); ``missing``: how to build a dataset
    that has this config, said by :meth:`ReferenceAttributes.require` when it is absent."""

    name: str
    columns: tuple[str, ...]
    required: bool = False
    prepare: Callable[[pd.DataFrame, str], pd.DataFrame] | None = None
    missing: str = f"build it with `{BUILDER}`"


_CONFIGS = REFERENCE_CONFIGS  # the name tests/test_reference_attributes.py patches


def reference_configs() -> dict[str, ReferenceConfig]:
    """Every declared config, by name: this module's, then the task folders' (the registry loads
    them on first read, :mod:`benchmark.registries`)."""
    return dict(REFERENCE_CONFIGS)


@dataclass
class ReferenceAttributes:
    """A loaded reference: its ``identity``, the ``folder`` it was read from, and ``configs``,
    every declared config the dataset has (read and checked), by name."""

    identity: ReferenceIdentity
    folder: Path
    configs: dict[str, pd.DataFrame]

    @property
    def mst_swatches(self) -> pd.DataFrame:
        """The Monk Skin Tone swatches (every reference has them), tone 1 first."""
        return self.configs[MST_SWATCHES]

    def config(self, name: str) -> pd.DataFrame | None:
        """The rows of the config ``name``, or None when this reference lacks it."""
        declared = reference_configs()
        if name not in declared:
            raise ReferenceAttributesError(f"no reference config {name!r} is declared; declared: "
                                           f"{', '.join(declared)}")
        return self.configs.get(name)

    def require(self, name: str) -> pd.DataFrame:
        """The rows of the config ``name``, or a one-line error when this reference lacks it."""
        frame = self.config(name)
        if frame is None:
            raise ReferenceAttributesError(f"reference {self.identity.source} has no {name} config: "
                                           f"{reference_configs()[name].missing}")
        return frame


def _prepare_swatches(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    frame = frame.sort_values("mst", ignore_index=True)
    swatch_itas(frame)  # a ValueError when a swatch is missing or out of order
    frame["image"] = [open_image(c, f"{where} MST {t}") for c, t in zip(frame["image"], frame["mst"])]
    return frame


MST_SWATCHES_CONFIG = ReferenceConfig(MST_SWATCHES, MST_COLUMNS, required=True, prepare=_prepare_swatches)
REGISTRATIONS = Registrations(reference_configs=(MST_SWATCHES_CONFIG,))


# --------------------------------------------------------------------------- layout


def card_configs(folder: str | Path) -> dict[str, list[str]]:
    """config name -> its ``train`` data-file patterns, from the card's YAML ``configs:``."""
    import yaml

    card = Path(folder) / "README.md"
    if not card.is_file():
        raise ReferenceAttributesError(f"{folder} has no README.md: not a reference-attributes dataset folder")
    text = card.read_text(encoding="utf-8")
    if not text.startswith("---\n") or "\n---" not in text[4:]:
        raise ReferenceAttributesError(f"{card} has no YAML header: not a reference-attributes dataset folder")
    try:
        header = yaml.safe_load(text[4:].split("\n---", 1)[0]) or {}
    except yaml.YAMLError as exc:
        raise ReferenceAttributesError(f"{card} has a broken YAML header ({str(exc).splitlines()[0]})") from None
    out: dict[str, list[str]] = {}
    for entry in header.get("configs") or []:
        files = entry.get("data_files") or []
        files = files if isinstance(files, list) else [files]
        out[str(entry.get("config_name", "default"))] = [
            f["path"] if isinstance(f, dict) else str(f) for f in files
            if not isinstance(f, dict) or f.get("split", SPLIT) == SPLIT]
    return out


def _config_files(folder: Path, patterns: list[str]) -> list[Path]:
    return sorted({p for pattern in patterns for p in folder.glob(pattern) if p.is_file() and p.suffix == ".parquet"})


def data_fingerprint(folder: str | Path, configs: dict[str, list[str]] | None = None) -> str:
    """sha256 over the data files of the declared configs (:func:`reference_configs`; another
    config of the card is left out): for each file in order of its path relative to the folder
    (POSIX), the line ``<path>\\t<sha256 of its bytes>\\n``. The card is left out too, so
    rewording it keeps the fingerprint."""
    folder = Path(folder)
    configs = card_configs(folder) if configs is None else configs
    declared = reference_configs()
    files = sorted({p for name in declared if name in configs for p in _config_files(folder, configs[name])},
                   key=lambda p: p.relative_to(folder).as_posix())
    return sha256_hex_chunks(f"{path.relative_to(folder).as_posix()}\t{file_sha256(path)}\n".encode() for path in files)


def _read_config(folder: Path, name: str, patterns: list[str], columns: tuple[str, ...]) -> pd.DataFrame:
    import pyarrow.parquet as pq

    files = _config_files(folder, patterns)
    if not files:
        raise ReferenceAttributesError(f"{folder}: config {name} lists no parquet file that exists ({patterns})")
    try:
        frame = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)
    except Exception as exc:  # a truncated or foreign file: say which
        raise ReferenceAttributesError(f"{folder}: cannot read config {name} ({type(exc).__name__}: "
                                       f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ReferenceAttributesError(f"{folder}: config {name} lacks the columns {missing}")
    return frame


def open_image(cell, where: str, sha256: str | None = None):
    """The image of a parquet ``image`` cell (``{"bytes": ...}``), checked against ``sha256``
    when given and decoded on first use; a one-line error naming ``where`` otherwise."""
    from PIL import Image, UnidentifiedImageError

    data = cell.get("bytes") if isinstance(cell, dict) else None
    if not data:
        raise ReferenceAttributesError(f"{where}: no embedded image bytes")
    if sha256 is not None and sha256_hex(data) != sha256:
        raise ReferenceAttributesError(f"{where}: the image bytes do not match its sha256 {sha256[:12]}...")
    try:
        return Image.open(io.BytesIO(data))  # decoded on first use
    except UnidentifiedImageError:
        raise ReferenceAttributesError(f"{where}: the embedded bytes are not an image") from None


def read_folder(folder: str | Path) -> tuple[dict[str, pd.DataFrame], str]:
    """({config name: its rows, read and checked}, fingerprint) of a dataset folder: every
    declared config the card lists, in the order they were declared."""
    folder = Path(folder)
    configs = card_configs(folder)
    declared = reference_configs()
    missing = [name for name, spec in declared.items() if spec.required and name not in configs]
    if missing:
        raise ReferenceAttributesError(f"{folder} lacks the configs {missing}: not a reference-attributes dataset")
    frames = {}
    for name, spec in declared.items():
        if name not in configs:
            continue
        frame, where = _read_config(folder, name, configs[name], spec.columns), f"{folder}: {name}"
        try:
            frames[name] = frame if spec.prepare is None else spec.prepare(frame, where)
        except ReferenceAttributesError:
            raise
        except ValueError as exc:
            raise ReferenceAttributesError(f"{where}: {exc}") from None
    return frames, data_fingerprint(folder, configs)


# --------------------------------------------------------------------------- Hub


def _snapshot(repo_id: str, revision: str | None) -> tuple[Path, str]:
    """(local snapshot folder, resolved commit) of a Hub dataset; one-line errors."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    at = f"{repo_id}@{revision or 'main'}"
    try:
        with hub_errors(repo_id, action="load the reference"):
            path = snapshot_download(repo_id, repo_type="dataset", revision=revision,
                                     allow_patterns=["README.md", "*/*.parquet"])
    except GatedRepoError:
        raise ReferenceAttributesError(f"cannot load the reference {at}: the dataset is gated; accept its terms on "
                                       "the Hub and log in (`hf auth login`)") from None
    except RevisionNotFoundError:
        raise ReferenceAttributesError(f"cannot load the reference {at}: no such revision") from None
    except RepositoryNotFoundError:
        raise ReferenceAttributesError(f"cannot load the reference {at}: no such dataset on the Hub, or the token "
                                       "cannot see it") from None
    except LocalEntryNotFoundError:
        raise ReferenceAttributesError(f"cannot load the reference {at}: it is not in the local Hub cache and the Hub "
                                       "cannot be reached (offline)") from None
    except HubError as exc:
        raise ReferenceAttributesError(str(exc)) from None
    path = Path(path)
    commit = path.name if _COMMIT.match(path.name) else (revision if revision and _COMMIT.match(revision) else None)
    if commit is None:
        raise ReferenceAttributesError(f"cannot load the reference {at}: the Hub cache gave no commit for it ({path})")
    return path, commit


# --------------------------------------------------------------------------- entry point


def load_reference_attributes(source: str | Path, revision: str | None = None) -> ReferenceAttributes:
    """A reference from a builder folder (``source`` an existing path) or a Hub dataset id
    (``ORG/NAME``, downloaded at ``revision``, default ``main``; the identity records the
    commit it resolved to). Every failure is a :class:`ReferenceAttributesError` with one line."""
    if source is None or not str(source).strip():
        raise ReferenceAttributesError("no reference given: pass a folder or a Hub dataset id ORG/NAME")
    text = str(source)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ReferenceAttributesError(f"reference {text} is a file, not a dataset folder")
        if revision is not None:
            raise ReferenceAttributesError(f"a revision applies to a Hub dataset only, and {text} is a local folder")
        folder, commit = path, None
    elif "/" in text and hub_id_problem(text) is None:  # ORG/NAME
        folder, commit = _snapshot(text, revision)
    else:
        raise ReferenceAttributesError(f"reference {text} is neither a folder nor a Hub dataset id ORG/NAME")
    frames, fingerprint = read_folder(folder)
    return ReferenceAttributes(identity=ReferenceIdentity(text, commit, fingerprint), folder=folder, configs=frames)
