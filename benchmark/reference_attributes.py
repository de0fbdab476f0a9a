"""Reference attributes: a fixed set of attribute images and texts that audits can score
against, and the Monk Skin Tone swatches, read from a folder written by
``python -m dataset_builders.reference_attributes`` or from that folder pushed to the Hub.

    ref = load_reference_attributes("refs/sd15")                       # a folder
    ref = load_reference_attributes("ORG/NAME", revision="main")       # a Hub dataset
    ref.mcas_images      # DataFrame: attribute_set, gender, keyword, prompt, seed, ..., image (PIL)
    ref.mcas_texts       # DataFrame: attribute_set, gender, text, role, papers
    ref.mst_swatches     # DataFrame: mst 1..10, srgb_*, cielab_*, ita, source, licence, image (PIL)
    ref.identity         # {source, revision, fingerprint}: what results.json records

The dataset's configs (one parquet split ``train`` each, listed in the card's YAML
``configs:``) are read with pyarrow, not through ``datasets``' cache, so a folder rebuilt
in place is read as it is now. ``fingerprint`` is the sha256 of the data files (recipe in
:func:`data_fingerprint`): two references with the same fingerprint hold the same rows
and images, wherever they were loaded from.

This module reads the dataset (the skin-tone annotator takes its swatches, MCAS its attribute
images and texts); a run audited against its MCAS attribute images (``t2ibench run
--mcas-reference``) is planned and recorded by :mod:`benchmark.tasks.mcas.reference`.
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchmark.hub.access import HubError, hub_errors
from benchmark.scores.skin_tone import swatch_itas

SPLIT = "train"
MST_SWATCHES = "mst_swatches"
MCAS_TEXT_ATTRIBUTES = "mcas_text_attributes"
MCAS_IMAGE_ATTRIBUTES = "mcas_image_attributes"
CONFIGS = (MST_SWATCHES, MCAS_TEXT_ATTRIBUTES, MCAS_IMAGE_ATTRIBUTES)
#: the configs every reference has; mcas_image_attributes needs a run folder to build
REQUIRED_CONFIGS = (MST_SWATCHES, MCAS_TEXT_ATTRIBUTES)

MST_COLUMNS = ("image", "mst", "srgb_hex", "srgb_r", "srgb_g", "srgb_b", "cielab_l", "cielab_a", "cielab_b", "ita",
               "source", "licence")
TEXT_COLUMNS = ("attribute_set", "gender", "text", "role", "papers")
IMAGE_COLUMNS = ("image", "probe_id", "attribute_set", "gender", "keyword", "prompt", "seed", "sample_index", "sha256",
                 "model_id", "revision", "settings")
ATTRIBUTE_SETS = ("A", "B")

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
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


@dataclass
class ReferenceAttributes:
    identity: ReferenceIdentity
    folder: Path
    mst_swatches: pd.DataFrame
    mcas_texts: pd.DataFrame
    mcas_images: pd.DataFrame | None  # None when the reference was built without a run folder

    def require_mcas_images(self) -> pd.DataFrame:
        """The image attributes, or a one-line error when this reference has none."""
        if self.mcas_images is None:
            raise ReferenceAttributesError(
                f"reference {self.identity.source} has no {MCAS_IMAGE_ATTRIBUTES} config: build it with "
                "`python -m dataset_builders.reference_attributes --from-run RUN_DIR`")
        return self.mcas_images


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
    """sha256 over the data files of the known configs: for each file in order of its path
    relative to the folder (POSIX), the line ``<path>\\t<sha256 of its bytes>\\n``. The card
    is left out, so rewording it keeps the fingerprint."""
    folder = Path(folder)
    configs = card_configs(folder) if configs is None else configs
    files = sorted({p for name in CONFIGS if name in configs for p in _config_files(folder, configs[name])},
                   key=lambda p: p.relative_to(folder).as_posix())
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(folder).as_posix()}\t{hashlib.sha256(path.read_bytes()).hexdigest()}\n"
                      .encode())
    return digest.hexdigest()


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


def _open_image(cell, where: str, sha256: str | None = None):
    from PIL import Image, UnidentifiedImageError

    data = cell.get("bytes") if isinstance(cell, dict) else None
    if not data:
        raise ReferenceAttributesError(f"{where}: no embedded image bytes")
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ReferenceAttributesError(f"{where}: the image bytes do not match its sha256 {sha256[:12]}...")
    try:
        return Image.open(io.BytesIO(data))  # decoded on first use
    except UnidentifiedImageError:
        raise ReferenceAttributesError(f"{where}: the embedded bytes are not an image") from None


def _check_attribute_sets(frame: pd.DataFrame, where: str) -> None:
    sets = set(frame["attribute_set"].astype(str))
    if sets != set(ATTRIBUTE_SETS):
        raise ReferenceAttributesError(f"{where} must hold both attribute sets A and B, got {sorted(sets)}")


def read_folder(folder: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None, str]:
    """(mst_swatches, mcas_texts, mcas_images or None, fingerprint) of a dataset folder."""
    folder = Path(folder)
    configs = card_configs(folder)
    missing = [c for c in REQUIRED_CONFIGS if c not in configs]
    if missing:
        raise ReferenceAttributesError(f"{folder} lacks the configs {missing}: not a reference-attributes dataset")

    swatches = _read_config(folder, MST_SWATCHES, configs[MST_SWATCHES], MST_COLUMNS)
    swatches = swatches.sort_values("mst", ignore_index=True)
    try:
        swatch_itas(swatches)
    except ValueError as exc:
        raise ReferenceAttributesError(f"{folder}: {MST_SWATCHES}: {exc}") from None
    swatches["image"] = [_open_image(c, f"{folder}: {MST_SWATCHES} MST {t}")
                         for c, t in zip(swatches["image"], swatches["mst"])]

    texts = _read_config(folder, MCAS_TEXT_ATTRIBUTES, configs[MCAS_TEXT_ATTRIBUTES], TEXT_COLUMNS)
    _check_attribute_sets(texts, f"{folder}: {MCAS_TEXT_ATTRIBUTES}")
    texts["papers"] = [list(p) for p in texts["papers"]]

    images = None
    if MCAS_IMAGE_ATTRIBUTES in configs:
        images = _read_config(folder, MCAS_IMAGE_ATTRIBUTES, configs[MCAS_IMAGE_ATTRIBUTES], IMAGE_COLUMNS)
        _check_attribute_sets(images, f"{folder}: {MCAS_IMAGE_ATTRIBUTES}")
        if images["probe_id"].duplicated().any():
            raise ReferenceAttributesError(f"{folder}: {MCAS_IMAGE_ATTRIBUTES} repeats a probe_id")
        images["image"] = [_open_image(c, f"{folder}: {MCAS_IMAGE_ATTRIBUTES} {pid}", str(sha))
                           for c, pid, sha in zip(images["image"], images["probe_id"], images["sha256"])]
    return swatches, texts, images, data_fingerprint(folder, configs)


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
    elif _REPO_ID.match(text):
        folder, commit = _snapshot(text, revision)
    else:
        raise ReferenceAttributesError(f"reference {text} is neither a folder nor a Hub dataset id ORG/NAME")
    swatches, texts, images, fingerprint = read_folder(folder)
    return ReferenceAttributes(identity=ReferenceIdentity(text, commit, fingerprint), folder=folder,
                               mst_swatches=swatches, mcas_texts=texts, mcas_images=images)
