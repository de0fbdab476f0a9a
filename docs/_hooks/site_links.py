"""MkDocs hook: a link from a page to a file of the repository outside docs/ (``../bench/README.md``,
``../benchmark/runner/audit.py``) points to that file on GitHub on the site, as it does when the
page is read on GitHub. Links inside docs/ are left to MkDocs, which checks them (strict build)."""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path

LOG = logging.getLogger("mkdocs.hooks.site_links")  # a warning fails the strict build
LINK = re.compile(r"(\]\()(\.\./[^)\s#]+)(#[^)\s]*)?(\))")


def on_page_markdown(markdown: str, page, config, files) -> str:
    repo = config["extra"]["repository"].rstrip("/")
    root = Path(config["docs_dir"]).resolve().parent
    here = posixpath.dirname(page.file.src_uri)

    def rewrite(m: re.Match) -> str:
        target = posixpath.normpath(posixpath.join("docs", here, m.group(2)))
        if target.startswith("docs/") or target.startswith(".."):
            return m.group(0)  # inside docs/ (MkDocs checks it) or outside the repository (left to fail)
        if not (root / target).exists():
            LOG.warning(f"{page.file.src_uri}: link to {m.group(2)}: no file {target} in the repository")
            return m.group(0)
        kind = "tree" if (root / target).is_dir() else "blob"
        return f"{m.group(1)}{repo}/{kind}/main/{target}{m.group(3) or ''}{m.group(4)}"

    return LINK.sub(rewrite, markdown)
