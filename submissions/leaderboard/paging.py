"""Server-side paging of the leaderboard table: the page sends one page of rows, never all."""

from __future__ import annotations

import math
from dataclasses import dataclass

PAGE_SIZE = 50


@dataclass(frozen=True)
class Page:
    """Page ``number`` (1-based, clamped to the pages there are) of ``total`` rows."""

    number: int
    size: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def start(self) -> int:
        return (self.number - 1) * self.size

    @property
    def stop(self) -> int:
        return min(self.total, self.start + self.size)

    def text(self) -> str:
        """``"Models 51–100 of 1,000 (page 2 of 20)"``."""
        if not self.total:
            return "No model matches."
        return (f"Models {self.start + 1:,}–{self.stop:,} of {self.total:,} "
                f"(page {self.number:,} of {self.pages:,})")


#: the page number that means "the last page", whatever their number
LAST = math.inf


def page_of(total: int, number: int | float | None = 1, size: int = PAGE_SIZE) -> Page:
    """The page ``number`` of ``total`` rows, clamped quietly to 1..pages (a number past the end
    is the last page, :data:`LAST` too; zero, a negative number or no number is the first)."""
    size = max(1, int(size))
    pages = max(1, -(-total // size))
    try:
        n = pages if number == LAST else int(number or 1)
    except (TypeError, ValueError, OverflowError):
        n = 1
    return Page(min(max(1, n), pages), size, total)
