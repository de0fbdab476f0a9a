"""Markdown checks shared by the card and README tests: what a renderer makes of a table."""

from __future__ import annotations

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark").enable("table")


def broken_table_lines(markdown: str) -> list[str]:
    """Lines that look like table rows ("| a | b |") but that a CommonMark + GFM-tables
    renderer (markdown-it-py, the parser behind rich) does not put in a table, outside code
    blocks; and tables with a header but no body row. Empty when every table renders."""
    tokens = _MD.parse(markdown)
    lines = markdown.splitlines()
    covered: set[int] = set()
    bad = []
    for i, tok in enumerate(tokens):
        if tok.type in ("table_open", "fence", "code_block") and tok.map:
            covered.update(range(*tok.map))
        close = next((j for j in range(i, len(tokens)) if tokens[j].type == "table_close"), i)
        if tok.type == "table_open" and not any(t.type == "tbody_open" for t in tokens[i:close]):
            bad.append(f"a table without rows at line {tok.map[0] + 1}: {lines[tok.map[0]]}")
    bad += [f"line {n + 1} is not in a table: {line}" for n, line in enumerate(lines)
            if line.lstrip().startswith("|") and n not in covered]
    return bad
