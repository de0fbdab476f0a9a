"""MkDocs hook: the docstrings name code with Sphinx roles (:class:`AuditRequest`,
:func:`run_audit`); mkdocstrings renders the name as code and leaves the role's text before it.
The API pages show the name alone."""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):(?=<code>)")


def on_page_content(html: str, page, config, files) -> str:
    return ROLE.sub("", html)
