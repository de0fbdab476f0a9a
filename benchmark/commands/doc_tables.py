"""The docs' tables that the registries declare, generated from them: the scores of
docs/results.md (``SCORE_METADATA``, also ``t2ibench scores --markdown``) and the evaluate
modules of the README (``EVALUATE_MODULES``: each module's row as its task folder declares it).
A new score or module is written in its folder only; these tables follow.

    python -m benchmark.commands.doc_tables           # rewrite the tables in README.md and docs/results.md
    python -m benchmark.commands.doc_tables --check   # exit 1 naming each stale table, write nothing

Each table stands between a ``<!-- generated: NAME ... -->`` line and an ``<!-- end: NAME -->``
line; the text between them is replaced, the rest of the file kept.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import benchmark
from benchmark.papers import paper_label
from benchmark.present.terminal import print_error
from benchmark.present.text import better_text, markdown_table, md_escape, range_text
from benchmark.registries import EVALUATE_MODULES, SCORE_METADATA

__all__ = ["score_table", "module_table", "TABLES", "stale_tables", "write_tables",
           "main"]

#: where a module's card is read on the web (the README's links)
MODULE_CARD_URL = "https://github.com/t2i-bias-benchmark/t2i-bias-benchmark/blob/main/metrics/{name}/README.md"


def score_table(metadata: Mapping | None = None) -> str:
    """Every registered score (in registry order) as a Markdown table: name, paper, range,
    better direction, headline or not, and what it measures."""
    benchmark.load_tasks()
    metadata = SCORE_METADATA if metadata is None else metadata
    return markdown_table(["score", "paper", "range", "better", "headline", "what it measures"],
                          [[f"`{m.name}`", md_escape(paper_label(m.paper)), range_text(m), better_text(m),
                            "yes" if m.headline else "", md_escape(m.description)] for m in metadata.values()])


def module_table(modules: Mapping | None = None) -> str:
    """Every evaluate module (in registry order) as a Markdown table: a link to its card, the
    inputs, keyword arguments, main outputs and citation its task folders declare."""
    benchmark.load_tasks()
    modules = EVALUATE_MODULES if modules is None else modules
    return markdown_table(["module", "inputs (per row)", "keyword arguments", "main outputs", "paper"],
                          [[f"[`{s.name}`]({MODULE_CARD_URL.format(name=s.name)})", s.inputs, s.keywords, s.outputs,
                            s.cites] for s in modules.values()])


#: file (relative to the checkout) -> (table name, what writes it)
TABLES: dict[str, tuple[str, Callable[[], str]]] = {
    "docs/results.md": ("scores", score_table),
    "README.md": ("evaluate-modules", module_table),
}


def _block(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- generated: {re.escape(name)}\b[^\n]*-->\n)(.*?)(<!-- end: {re.escape(name)} -->)", re.S)


def _updated(text: str, name: str, table: str, where: str) -> str:
    found = _block(name).findall(text)
    if len(found) != 1:
        raise ValueError(f"{where} needs one '<!-- generated: {name} -->' ... '<!-- end: {name} -->' block, "
                         f"found {len(found)}")
    return _block(name).sub(lambda m: m.group(1) + table + "\n" + m.group(3), text)


def stale_tables(root: str | Path) -> list[str]:
    """``file: table`` of every generated table of ``root``'s docs that differs from the registries."""
    out = []
    for rel, (name, make) in TABLES.items():
        text = (Path(root) / rel).read_text(encoding="utf-8")
        if _updated(text, name, make(), rel) != text:
            out.append(f"{rel}: {name}")
    return out


def write_tables(root: str | Path) -> list[str]:
    """Rewrite the generated tables of ``root``'s docs; returns those that changed."""
    changed = stale_tables(root)
    for rel, (name, make) in TABLES.items():
        path = Path(root) / rel
        path.write_text(_updated(path.read_text(encoding="utf-8"), name, make(), rel), encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark.commands.doc_tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only name the stale tables (exit 1), write nothing")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    try:
        stale = stale_tables(args.root) if args.check else write_tables(args.root)
    except (OSError, ValueError) as exc:
        print_error(exc)
        return 2
    for line in stale:
        print(f"{'stale' if args.check else 'rewrote'} {line}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
