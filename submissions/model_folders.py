"""The folder a model's results files (and its queue requests) live under: one per model id,
never shared by two ids."""

from __future__ import annotations

import re

from benchmark.contract.digest import sha256_hex

__all__ = ["model_folder_name"]

# Two different model ids never share a folder (tested): a valid Hub id (which never holds
# "--", and whose parts start with a letter or digit) keeps its readable form with "--" for
# "/", as the Hub's own cache names folders; every other id starts with "_", which no Hub id
# does, and ends with a hash of the id.

HASH_CHARS = 16


def _slug(text: str, limit: int = 48) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip(".-")[:limit].strip(".-") or "unnamed"


def model_folder_name(model_id: str) -> str:
    """The folder of a model's results files, one per model id (injective):

    ``org--name`` for a valid Hub id ``org/name`` (``name`` for a one-part id), ``_builtin--NAME``
    for ``builtin:NAME``, and ``_<kind>--<readable part>-<hash>`` for a callable
    (``_python--``), a local folder (``_local--``) or any other string (the hash: 16 hex
    digits of the id's sha256).
    """
    # the id rules live with the results checks, which load the results reader: not at import,
    # since the queue's light command-line paths import this module
    from submissions.validate import BUILTIN_ID, model_id_kind, model_id_problem

    if not model_id:
        raise ValueError("the results name no model id")
    kind = model_id_kind(model_id)
    if kind == "hub" and model_id_problem(model_id) is None and not model_id.startswith("_"):
        return model_id.replace("/", "--")  # (a Hub id may start with "_": hashed, apart from "_builtin--")
    if kind == "builtin" and BUILTIN_ID.match(model_id) and "--" not in model_id:
        return f"_builtin--{model_id[len('builtin:'):]}"
    digest = sha256_hex(model_id.encode("utf-8"))[:HASH_CHARS]
    if kind == "python":
        tail = model_id[len("python:"):].replace(":", ".")
    else:
        tail = model_id.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return f"_{kind}--{_slug(tail)}-{digest}"
