"""A model card's YAML front matter (the ``---`` block that opens a README.md: ``base_model``,
``instance_prompt``, ``widget``, ``prior`` ...), read so that no card can run code, exhaust memory
or time, or end an audit in a traceback.

* only the front matter is read, and at most :data:`MAX_FRONT_MATTER_BYTES` of it: the file is read
  in chunks until its closing ``---`` (a 50 MB block is refused after reading 256 KiB of it);
* YAML's safe loader (libyaml's ``CSafeLoader`` where PyYAML has it): no ``!!python/...`` tag is
  constructed, an unknown tag is refused;
* its events are counted before anything is built: nesting deeper than :data:`MAX_DEPTH` and
  anchors / aliases (a "billion laughs" block) are refused, so the composer's recursion is never
  reached with a block 5,000 levels deep;
* the block must be a mapping with text keys.

Every refusal is one :class:`BadCardError` line naming the file and the reason. The block is
delimited as huggingface_hub's ``ModelCard`` delimits it (``REGEX_YAML_BLOCK``); a README whose
opening ``---`` is never closed has no front matter, as there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .errors import MalformedSpecError

__all__ = ["BadCardError", "MAX_FRONT_MATTER_BYTES", "MAX_DEPTH", "read_front_matter", "parse_front_matter",
           "card_body"]

#: the largest front matter read (real cards' blocks, widget galleries and model-index tables
#: included, are a few KiB; the Hub's own card parser has no limit)
MAX_FRONT_MATTER_BYTES = 256 * 1024
#: the deepest nesting of mappings and lists read (real cards nest 4 or 5 levels: model-index results)
MAX_DEPTH = 32
_CHUNK = 64 * 1024
_OPEN = re.compile(r"^\s*---[ \t]*(?:\r\n|\r|\n)")
_CLOSE = re.compile(r"(?:\r\n|\r|\n)---[ \t]*(?:\r\n|\n|$)")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class BadCardError(MalformedSpecError):
    """A model card whose front matter cannot be read (one line, naming the file and why)."""


def _front_text(readme: Path, limit: int) -> str | None:
    """The text between the opening and closing ``---`` of ``readme``, or None when it has no
    front matter; read in chunks, never more than ``limit`` bytes past the opening line."""
    try:
        with open(readme, "rb") as fh:
            head = fh.read(min(_CHUNK, limit + 16))
            text = head.decode("utf-8", errors="replace")
            opening = _OPEN.match(text)
            if opening is None:
                return None
            data = head
            while True:
                text = data.decode("utf-8", errors="replace")
                closing = _CLOSE.search(text, opening.end() - 1)
                if closing is not None:
                    return text[opening.end():closing.start()]
                if len(data) - opening.end() > limit:
                    raise BadCardError(f"{readme}: its front matter is longer than {limit // 1024} KiB (read no "
                                       "further; real model cards' blocks are a few KiB)")
                more = fh.read(_CHUNK)
                if not more:
                    return None  # never closed: no front matter, as huggingface_hub reads it
                data += more
    except OSError as err:
        raise BadCardError(f"{readme} cannot be read ({type(err).__name__})") from None


def _first_line(err: Exception) -> str:
    """The problem of a YAML error, on one line, with where it is."""
    problem = getattr(err, "problem", None) or getattr(err, "context", None) or str(err)
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"{type(err).__name__}: {' '.join(str(problem).split())[:160]}{where}"


def _check_events(text: str, where: str) -> None:
    """Nesting depth and aliases, from the event stream (iterative: no recursion, nothing built)."""
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise BadCardError(f"{where}: its front matter nests deeper than {MAX_DEPTH} levels (not read)")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise BadCardError(f"{where}: its front matter uses YAML anchors or aliases, which are not read "
                               "(a card has no need of them)")


def parse_front_matter(text: str, *, where: str) -> dict[str, Any]:
    """The mapping a front-matter block holds ({} for an empty block); one :class:`BadCardError`
    line for a block that does not parse, is too deep, uses aliases or tags, or is no mapping."""
    if len(text.encode("utf-8", errors="replace")) > MAX_FRONT_MATTER_BYTES:
        raise BadCardError(f"{where}: its front matter is longer than {MAX_FRONT_MATTER_BYTES // 1024} KiB")
    try:
        _check_events(text, where)
        data = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader (CSafeLoader / SafeLoader)
    except BadCardError:
        raise
    except yaml.YAMLError as err:
        raise BadCardError(f"{where}: its front matter is not YAML a card may hold ({_first_line(err)})") from None
    except (RecursionError, MemoryError, ValueError, TypeError) as err:  # belt and braces: one line whatever
        raise BadCardError(f"{where}: its front matter cannot be read ({type(err).__name__})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BadCardError(f"{where}: its front matter is a {type(data).__name__}, not a mapping of fields")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise BadCardError(f"{where}: its front matter has a field named {bad[0]!r}, not a text name")
    return data


def read_front_matter(readme: str | Path, *, limit: int = MAX_FRONT_MATTER_BYTES) -> dict[str, Any]:
    """The front matter of the README ``readme`` as a dict ({} when it has none); one
    :class:`BadCardError` line when it cannot be read (module docstring)."""
    readme = Path(readme)
    text = _front_text(readme, limit)
    return {} if text is None else parse_front_matter(text, where=str(readme))


def card_body(text: str) -> str:
    """A README's text after its front matter (the whole text when it has none)."""
    opening = _OPEN.match(text)
    closing = _CLOSE.search(text, opening.end() - 1) if opening else None
    return text[closing.end():] if closing else text
