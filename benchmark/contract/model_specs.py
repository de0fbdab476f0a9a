"""What the results contract reads from a model spec: whether it names a built-in tiny
random-weight model (``builtin:...``), whose outputs are meaningless and are flagged as such in
run_config.json, results.json, the report and the leaderboard; and the one rule of which model
names, ids, specs and revisions are valid (:func:`model_id_problem`, :func:`model_spec_problem`,
:func:`model_name_problem`, :func:`revision_problem`), used by ``run``, ``probes export``,
``submit``, the queue and ``validate``."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping

#: specs of the built-in tiny random-weight models start with this
BUILTIN_PREFIX = "builtin:"


def is_builtin(model) -> bool:
    """True for a built-in tiny random-weight model, whose outputs are meaningless.

    ``model`` is a spec (``"builtin:tiny-sd"``), a loaded model with ``is_builtin``, or a
    model block of ``run_config.json`` / ``results.json`` (``spec``, ``model_id`` / ``id``,
    ``builtin``).
    """
    if model is None:
        return False
    if isinstance(model, str):
        return model.strip().startswith(BUILTIN_PREFIX)
    if isinstance(model, Mapping):
        return bool(model.get("builtin")) or any(is_builtin(model.get(k)) for k in ("spec", "model_id", "id"))
    return bool(getattr(model, "is_builtin", False)) or is_builtin(getattr(model, "name", None))



# --------------------------------------------------------------------------- which names are valid
#
# The one rule for model names, ids, specs and revisions: ``t2ibench run`` (``--model``,
# ``--model-name``), ``probes export --model``, ``submit``, the queue (requests and the worker)
# and ``t2ibench validate`` all ask these functions, so that nothing accepted early is refused
# later. Standard library only at import (the command line parses options with it);
# huggingface_hub's own repo-id rule is imported when a Hub id is checked.

MAX_HUB_ID_CHARS = 96  # the whole id, as huggingface_hub documents it ("between 1 and 96 characters")
BUILTIN_ID = re.compile(r"^builtin:[A-Za-z0-9][A-Za-z0-9._-]*$")
# python:module.path:function (qualified names of nested functions hold "<locals>")
PYTHON_ID = re.compile(r"^python:[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_<][A-Za-z0-9_.<>]*$")
# a local diffusers folder: the runner records its absolute path as the id, the spec as typed
LOCAL_PATH_ID = re.compile(r"^(/|~|\.\.?[\\/]|[A-Za-z]:[\\/])")
# images made elsewhere (t2ibench run --images --model-name NAME) and image APIs (openai:MODEL)
IMAGES_PREFIX, API_PREFIX = "images:", "openai:"
# a single-file checkpoint on the Hub: hf://ORG/NAME[@REVISION]/PATH/FILE.safetensors (huggingface_hub's
# file-system form), also written as the Hub's own URL https://huggingface.co/ORG/NAME/blob/REVISION/PATH
# (or resolve/REVISION), as diffusers' from_single_file takes it; the id recorded is the hf:// form. No folder
# of PATH is "." or "..": a Hub path never is, and a queue request names it for a worker to download
HUB_FILE_PREFIX = "hf://"
HUB_FILE_URL = re.compile(r"^(?:https?://)?(?:huggingface\.co|hf\.co)/(?P<repo>[^/@]+/[^/@]+)/(?:blob|resolve)/"
                          r"(?P<revision>[^/]+)/(?P<path>.+)$")
HUB_FILE_ID = re.compile(r"^hf://(?P<repo>[^/@]+/[^/@]+?)(?:@(?P<revision>[A-Za-z0-9._+-]{1,255}))?/"
                         r"(?P<path>(?:(?!\.\.?/)[A-Za-z0-9._+-]+/)*[A-Za-z0-9._+-]+\.(?:safetensors|gguf))$")
SINGLE_FILE_SUFFIXES = (".safetensors", ".gguf")
IMAGES_ID = re.compile(r"^images:[A-Za-z0-9][A-Za-z0-9._/ +-]*$")
API_ID = re.compile(r"^openai:[A-Za-z0-9][A-Za-z0-9._-]*$")
MAX_OTHER_ID_CHARS = 1024
REVISION = re.compile(r"^[A-Za-z0-9._/+-]{1,255}$")
HUB_ID_RULE = ("a Hub model id ([ORG/]NAME of letters, digits, '.', '_', '-'; no part starting or ending with "
               "'-' or '.'; no '--' or '..'; at most 96 characters)")


def hub_file_id(spec: str) -> str | None:
    """``hf://ORG/NAME[@REVISION]/PATH`` for a Hub file written either way (module constants), or
    None when ``spec`` is neither form; ``main`` is the default revision and is left out."""
    if not isinstance(spec, str):
        return None
    url = HUB_FILE_URL.match(spec.strip())
    if url:
        revision = "" if url["revision"] == "main" else f"@{url['revision']}"
        return f"{HUB_FILE_PREFIX}{url['repo']}{revision}/{url['path']}"
    return spec.strip() if spec.strip().startswith(HUB_FILE_PREFIX) else None


def names_single_file(spec: str) -> bool:
    """True when ``spec`` has the form of a single-file checkpoint (a Hub file, or a path ending in
    ``.safetensors`` / ``.gguf``), from the text alone: what ``--base`` goes with."""
    return isinstance(spec, str) and (hub_file_id(spec) is not None
                                      or spec.strip().lower().endswith(SINGLE_FILE_SUFFIXES))


#: ``--base`` given with a model that is not a single-file checkpoint (run, the queue, the loader)
BASE_WITHOUT_SINGLE_FILE = ("--base names the base of a single-file checkpoint (--model FILE.safetensors), "
                            "not of {spec}")


def model_id_kind(model_id: str) -> str:
    """``builtin``, ``python``, ``images``, ``api``, ``hub_file`` (a single-file checkpoint on the Hub),
    ``local`` (a folder or file path) or ``hub``, from the id's form alone."""
    if model_id.startswith(HUB_FILE_PREFIX):
        return "hub_file"
    if model_id.startswith(BUILTIN_PREFIX):
        return "builtin"
    if model_id.startswith("python:"):
        return "python"
    if model_id.startswith(IMAGES_PREFIX):
        return "images"
    if model_id.startswith(API_PREFIX):
        return "api"
    if LOCAL_PATH_ID.match(model_id):
        return "local"
    return "hub"


def _char_name(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, '(a control character)')}"


def unsafe_char(text: str) -> str | None:
    """Why ``text`` cannot be shown as an id: a control, invisible or direction-changing
    character, or any non-ASCII character (look-alikes: Cyrillic 'а' for Latin 'a')."""
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") or unicodedata.bidirectional(ch) in (
                "RLO", "LRO", "RLE", "LRE", "RLI", "LRI", "FSI", "PDF", "PDI", "R", "AL"):
            return f"holds {_char_name(ch)}: control, invisible and right-to-left characters are refused"
    if unicodedata.normalize("NFC", text) != text:
        return "is not NFC-normalised Unicode"
    for ch in text:
        if ord(ch) > 0x7E:
            return f"holds the non-ASCII character {_char_name(ch)}: ids are ASCII (look-alike letters are refused)"
    return None


def hub_id_problem(repo_id: str) -> str | None:
    """Why ``repo_id`` is not a Hub repo id, or None: huggingface_hub's ``validate_repo_id``, ASCII
    only, at most 96 characters in all."""
    if len(repo_id) > MAX_HUB_ID_CHARS:
        return f"is {len(repo_id)} characters long: a Hub id has at most {MAX_HUB_ID_CHARS}"
    if not repo_id.isascii():  # validate_repo_id's \w takes any Unicode letter
        return f"is not {HUB_ID_RULE}"
    from huggingface_hub.utils import HFValidationError, validate_repo_id  # a base dependency, imported on use

    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        return f"is not {HUB_ID_RULE}"
    return None


def model_id_problem(model_id) -> str | None:
    """Why ``model_id`` (a results file's model id or spec) is not acceptable, or None.

    A Hub id (:func:`hub_id_problem`); ``builtin:NAME`` (a demo, refused elsewhere unless
    allowed); ``python:module:function``; ``images:NAME``; ``openai:MODEL``; or the path of a
    local folder (printable ASCII). Every id is NFC, ASCII and free of control, invisible and
    right-to-left characters.
    """
    if not isinstance(model_id, str) or not model_id:
        return None  # the schema reports a missing or non-string id
    unsafe = unsafe_char(model_id)
    if unsafe:
        return unsafe
    kind = model_id_kind(model_id)
    if kind == "hub":
        scheme = model_id.split(":", 1)[0] if ":" in model_id else None
        if scheme is not None and "/" not in scheme:
            return (f"has an unknown scheme {scheme + ':'!r} (use builtin:NAME, python:module:function, "
                    "openai:MODEL, images:NAME, a Hub model ID or a local folder)")
        problem = hub_id_problem(model_id)
        if problem and problem.startswith("is not "):
            problem += ", a builtin:, python:, images: or openai: spec, or a local folder path"
        return problem
    if len(model_id) > MAX_OTHER_ID_CHARS:
        return f"is {len(model_id)} characters long (at most {MAX_OTHER_ID_CHARS})"
    if kind == "builtin" and not BUILTIN_ID.match(model_id):
        return "is not a built-in model spec builtin:NAME"
    if kind == "python" and not PYTHON_ID.match(model_id):
        return "is not a callable spec python:module.path:function"
    if kind == "images" and not IMAGES_ID.match(model_id):
        return "is not images:NAME (letters, digits, '.', '_', '/', ' ', '+', '-')"
    if kind == "api" and not API_ID.match(model_id):
        return "is not an image API spec openai:MODEL"
    if kind == "hub_file":
        match = HUB_FILE_ID.match(model_id)
        if not match:
            return ("is not a Hub file hf://ORG/NAME[@REVISION]/PATH ending in .safetensors or .gguf (letters, digits, "
                    "'.', '_', '+', '-')")
        problem = hub_id_problem(match["repo"])
        return problem and f"names a repo that {problem}"
    return None


def revision_problem(revision) -> str | None:
    """Why ``revision`` (a recorded model revision) is not a branch, tag or commit, or None."""
    if revision is None:
        return None
    if not isinstance(revision, str) or not REVISION.match(revision):
        return "is not a branch, tag or commit (letters, digits, '.', '_', '/', '+', '-'; at most 255)"
    return None


def model_name_problem(name) -> str | None:
    """Why ``name`` cannot be the ``--model-name`` of images made elsewhere, or None. The results
    record it as the model id and ``images:NAME`` as the spec: both must pass :func:`model_id_problem`."""
    if not isinstance(name, str) or not name.strip():
        return "is empty: give the name the results and the leaderboard show"
    unsafe = unsafe_char(name)
    if unsafe:
        return unsafe
    if model_id_kind(name) != "hub" or model_id_problem(name) or model_id_problem(IMAGES_PREFIX + name):
        return f"is not a model name: use {HUB_ID_RULE}"
    return None


def model_spec_problem(spec) -> str | None:
    """Why ``spec`` (``--model``, recorded as the spec; a local folder also as its absolute path)
    cannot be recorded in results that ``t2ibench validate`` accepts, or None. Whether the model
    exists is checked elsewhere (preflight)."""
    if not isinstance(spec, str) or not spec.strip():
        return "is empty"
    if hub_file_id(spec):  # a Hub URL of a file: recorded in its hf:// form
        return model_id_problem(hub_file_id(spec))
    folder = model_id_kind(spec) in ("local", "hub") and (os.path.isdir(os.path.expanduser(spec))
                                                           or os.path.isfile(os.path.expanduser(spec)))
    problem = model_id_problem(spec)
    if problem and folder and model_id_kind(spec) == "hub":
        return f"{problem}; for the local folder or file write ./{spec}"
    if problem is None and folder:
        problem = model_id_problem(os.path.realpath(os.path.expanduser(spec)))  # the id the run records
        problem = problem and f"is a folder whose absolute path {problem}"
    return problem


def _shown(value: str, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 4] + "...'"


def check_model_spec(spec, option: str = "--model") -> str:
    """``spec`` if :func:`model_spec_problem` finds nothing; a one-line ValueError otherwise."""
    problem = model_spec_problem(spec)
    if problem:
        raise ValueError(f"{option} {_shown(spec)} {problem}")
    return spec


def check_model_name(name, option: str = "--model-name") -> str:
    """``name`` if :func:`model_name_problem` finds nothing; a one-line ValueError otherwise."""
    problem = model_name_problem(name)
    if problem:
        raise ValueError(f"{option} {_shown(name)} {problem}")
    return name
