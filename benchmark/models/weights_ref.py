"""A weights file named on the command line: a LoRA (``--lora``) or a component checkpoint
(SDXL-Lightning's UNet), on disk or on the Hub, parsed without touching the disk or the
network (:func:`parse_weights_ref`) and then found (:func:`resolve_weights`): its local path,
the Hub commit it came from and its sha256, which make it part of the model's identity.

Syntax (the scale only where the caller takes one: ``--lora``)::

    PATH[:SCALE]                       a .safetensors file, or a folder holding one
    ORG/NAME[@REVISION][/FILE][:SCALE]  a Hub repo, at a revision, one file of it

A Hub ID never holds ``:`` and a scale is a number, so ``X:0.8`` is read as ``X`` at scale 0.8
only when ``0.8`` parses as a number; a local path that itself ends in ``:NUMBER`` is taken
whole when it exists, and refused as ambiguous when ``X`` exists too. ``FILE`` picks one file of
a repo with several (SDXL-Lightning's 2-, 4- and 8-step LoRAs live in one repo); without it the
repo or folder must hold ``pytorch_lora_weights.safetensors`` (diffusers' name) or exactly one
``.safetensors`` file. Only safetensors files are read: a pickle file can run code.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from benchmark.contract.digest import file_sha256

from .errors import MalformedSpecError, ModelNotAvailableError, ModelNotFoundError
from .hub_access import cached_commit, ensure_hub_model, hub_offline, looks_like_path
from .weight_files import check_weights_file

__all__ = ["WeightsRef", "ResolvedWeights", "DIFFUSERS_LORA_FILE", "parse_weights_ref", "resolve_weights",
           "local_weights_file", "check_local_weights"]

#: the file name diffusers' ``save_lora_weights`` writes (and ``load_lora_weights`` prefers)
DIFFUSERS_LORA_FILE = "pytorch_lora_weights.safetensors"
_SUFFIX = ".safetensors"


@dataclass(frozen=True)
class WeightsRef:
    """A parsed weights reference. ``repo``: the Hub repo ID (None for a local path);
    ``path``: the local file or folder (None for the Hub); ``weight_name``: the file inside the
    repo or folder, when named; ``scale``: the LoRA scale (1.0 when not given)."""

    text: str
    repo: str | None = None
    path: str | None = None
    weight_name: str | None = None
    revision: str | None = None
    scale: float = 1.0
    scale_given: bool = False

    @property
    def name(self) -> str:
        """The reference without its scale: the key of its card table row."""
        if self.repo:
            return self.repo + (f"/{self.weight_name}" if self.weight_name else "")
        return str(self.path)


@dataclass(frozen=True)
class ResolvedWeights:
    """A reference found: the local ``file``, its ``sha256``, the Hub ``commit`` it came from."""

    ref: WeightsRef
    file: Path
    sha256: str
    commit: str | None = None
    weight_name: str | None = None  # the file inside the Hub repo

    @property
    def card_id(self) -> str:
        """``REPO/FILE`` for a Hub file (the card table's key), the absolute path for a local one."""
        return f"{self.ref.repo}/{self.weight_name}" if self.ref.repo else str(self.file)

    def record(self) -> dict:
        """The identity record (JSON-ready): where it came from, which commit, its sha256."""
        out = {"id": self.card_id, "sha256": self.sha256}
        if self.ref.repo:
            out.update(repo=self.ref.repo, file=self.weight_name, revision=self.commit or self.ref.revision)
        else:
            out.update(path=str(self.file), revision=None)
        return out


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _exists(text: str) -> bool:
    return Path(os.path.expanduser(text)).exists()


def parse_weights_ref(text: str, *, what: str = "LoRA", takes_scale: bool = True) -> WeightsRef:
    """Parse ``text`` (module docstring); one-line :class:`MalformedSpecError` when it cannot be
    a path or a Hub reference. Checks nothing on disk but which of two readings exists."""
    if not isinstance(text, str) or not text.strip():
        raise MalformedSpecError(f"empty {what} reference")
    text = text.strip()
    head, scale, given = text, 1.0, False
    if takes_scale and ":" in text:
        left, right = text.rsplit(":", 1)
        number = _number(right)
        if number is not None and left:
            if _exists(text) and _exists(left):
                raise MalformedSpecError(f"{what} {text!r} is ambiguous: both {text!r} and {left!r} exist (rename one, "
                                         "or write the scale explicitly after the full path)")
            if not _exists(text):
                head, scale, given = left, number, True
    if _exists(head):
        return WeightsRef(text, path=str(Path(os.path.expanduser(head)).resolve()), scale=scale, scale_given=given)
    parts = head.split("/")
    if looks_like_path(head) or len(parts) < 2 or (len(parts) == 2 and head.endswith((_SUFFIX, ".bin", ".pt"))):
        raise MalformedSpecError(f"{what} file or folder {head!r} does not exist")
    name, _, revision = parts[1].partition("@")
    repo = f"{parts[0]}/{name}"
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo)
    except HFValidationError:
        raise MalformedSpecError(f"{what} {head!r} is neither an existing file or folder nor a Hub reference "
                                 "(ORG/NAME[@REVISION][/FILE])") from None
    weight_name = "/".join(parts[2:]) or None
    return WeightsRef(text, repo=repo, weight_name=weight_name, revision=revision or None, scale=scale,
                      scale_given=given)


def _pick(files: list[str], where: str, what: str, text: str) -> str:
    """The one weights file of a folder or repo (module docstring), or one line naming them."""
    found = sorted(f for f in files if f.endswith(_SUFFIX))
    if not found:
        raise MalformedSpecError(f"{where} holds no {_SUFFIX} file: it is not a {what} this loader reads "
                                 "(only safetensors files are read: a pickle file can run code)")
    preferred = [f for f in found if Path(f).name == DIFFUSERS_LORA_FILE]
    if len(preferred) == 1:
        return preferred[0]
    if len(found) > 1:
        listed = ", ".join(found[:8]) + (" ..." if len(found) > 8 else "")
        raise MalformedSpecError(f"{where} holds several weights files ({listed}): name one, as {text.split(':')[0]}"
                                 f"/FILE")
    return found[0]


def _hub_files(ref: WeightsRef, token) -> list[str]:
    """The files of a Hub repo at the reference's revision: the cached snapshot's, or the Hub's."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = Path(snapshot_download(ref.repo, revision=ref.revision, local_files_only=True, token=token))
        return [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    except (LocalEntryNotFoundError, OSError, ValueError):
        pass
    if hub_offline():
        raise ModelNotAvailableError(f"{ref.repo} is not in the local Hugging Face cache and the Hub cannot be "
                                     "reached (HF_HUB_OFFLINE is set): download it first with `hf download`")
    return HfApi().list_repo_files(ref.repo, revision=ref.revision, token=token)


def _suffix_problem(name: str, what: str, suffixes: tuple[str, ...]) -> MalformedSpecError | None:
    if name.endswith(suffixes):
        return None
    kinds = "safetensors and GGUF files are" if len(suffixes) > 1 else "safetensors files are"
    return MalformedSpecError(f"{what} {name} is not a {' or '.join(suffixes)} file (only {kinds} read: a pickle "
                              "file can run code)")


def local_weights_file(ref: WeightsRef, what: str = "LoRA", suffixes: tuple[str, ...] = (_SUFFIX,)) -> Path:
    """The weights file of a local reference (the one file of a folder: :func:`_pick`); one line
    for a folder with none or several, or a file of another kind than ``suffixes``."""
    path = Path(ref.path)
    if path.is_dir():
        path = path / _pick([p.name for p in path.iterdir() if p.is_file()], str(path), what, ref.text)
    problem = _suffix_problem(str(path), what, suffixes)
    if problem:
        raise problem
    return path


def check_local_weights(refs, what: str = "LoRA") -> None:
    """Each local reference of ``refs`` found and its file checked (weight_files.py: a regular
    file, its header within limits, its tensors finite), before torch or diffusers load; Hub
    references are checked when they are resolved."""
    for ref in refs:
        if ref.path is not None:
            check_weights_file(local_weights_file(ref, what), what=what)


def resolve_weights(ref: WeightsRef, *, what: str = "LoRA", token: str | bool | None = None,
                    suffixes: tuple[str, ...] = (_SUFFIX,)) -> ResolvedWeights:
    """Find the file of ``ref`` (a local file or folder, or a Hub repo's file from the cache or,
    unless offline, the Hub), check it (weight_files.py) and hash it; one-line errors for a missing
    file or repo, a folder or repo with no or several weights files, a file that is not
    safetensors or fails the checks."""
    if ref.path is not None:
        path = local_weights_file(ref, what, suffixes)
        check_weights_file(path, what=what)
        return ResolvedWeights(ref, path, file_sha256(path))
    from huggingface_hub import hf_hub_download

    name = ref.weight_name or _pick(_hub_files(ref, token), ref.repo, what, ref.text)
    problem = _suffix_problem(f"{ref.repo}/{name}", what, suffixes)
    if problem:
        raise problem
    where = ensure_hub_model(ref.repo, [name], revision=ref.revision, token=token, what=what)
    try:
        file = Path(hf_hub_download(ref.repo, name, revision=ref.revision, token=token,
                                    local_files_only=where == "cache"))
    except OSError as err:  # pragma: no cover - the checks above catch a missing file first
        raise ModelNotFoundError(f"{what} {ref.repo}/{name} cannot be downloaded ({type(err).__name__})") from None
    check_weights_file(file, what=what)
    return ResolvedWeights(ref, file, file_sha256(file), commit=cached_commit(ref.repo, name, ref.revision),
                           weight_name=name)
