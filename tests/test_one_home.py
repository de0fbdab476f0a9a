"""One job, one implementation: "now" is written by benchmark/contract/times.py, sha256 is
computed by benchmark/contract/digest.py, Markdown tables are written by
benchmark/present/text.py's markdown_table; no source file does these jobs by hand."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path

import pandas as pd
import pytest

from benchmark.contract.digest import file_sha256, sha256_hex, sha256_hex_chunks
from benchmark.contract.times import parse_iso_time, utc_compact, utc_iso, utc_iso_ms, utc_now, utc_time_or_none
from benchmark.present.text import frame_table, markdown_table

ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = ("benchmark", "submissions", "dataset_builders", "bench", "metrics")
WHEN = dt.datetime(2026, 11, 24, 10, 30, 0, 125_999, tzinfo=dt.timezone(dt.timedelta(hours=1)))


def _sources() -> list[Path]:
    return sorted(p for d in SOURCE_ROOTS for p in (ROOT / d).rglob("*.py"))


def _hand_made(pattern: str, home: str) -> list[str]:
    """``file:line: text`` of every line of the sources outside ``home`` that matches ``pattern``."""
    found = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel == home:
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{rel}:{i}: {line.strip()}")
    return found


# --------------------------------------------------------------------------- times


def test_each_use_has_one_form_all_in_utc():
    assert utc_iso(WHEN) == "2026-11-24T09:30:00Z"  # documents
    assert utc_iso_ms(WHEN) == "2026-11-24T09:30:00.125Z"  # events, heartbeats
    assert utc_compact(WHEN) == "20261124T093000Z"  # file names
    assert utc_now().tzinfo is not None
    for form in (utc_iso, utc_iso_ms, utc_compact):
        assert form().endswith("Z")
        with pytest.raises(ValueError, match="no UTC offset"):
            form(WHEN.replace(tzinfo=None))  # a naive time's zone is unknown: refused, not guessed


def test_what_is_written_reads_back_and_so_do_the_older_forms():
    assert parse_iso_time(utc_iso(WHEN)) == WHEN.replace(microsecond=0)
    assert parse_iso_time(utc_iso_ms(WHEN)) == WHEN.replace(microsecond=125_000)
    # written before the forms were fixed: results.json's "+00:00", run_config.json's local "%z"
    for old in ("2026-11-24T09:30:00+00:00", "2026-11-24T10:30:00+0100", "2026-11-24T09:30:00.125+00:00"):
        assert utc_time_or_none(old).replace(microsecond=0) == WHEN.replace(microsecond=0)


def test_no_source_writes_the_time_by_hand():
    bad = _hand_made(r"strftime\(|datetime\.now\(|\.utcnow\(|time\.localtime\(|time\.gmtime\(|date\.today\(",
                     "benchmark/contract/times.py")
    assert not bad, "write times with benchmark.contract.times:\n" + "\n".join(bad)


# --------------------------------------------------------------------------- sha256


def test_the_digests_agree_with_hashlib(tmp_path):
    data = b"probe\x1fprompt\x1e" * 1000
    (tmp_path / "f").write_bytes(data)
    assert file_sha256(tmp_path / "f") == sha256_hex(data) == hashlib.sha256(data).hexdigest()
    assert sha256_hex_chunks(data[i:i + 7] for i in range(0, len(data), 7)) == sha256_hex(data)
    assert sha256_hex_chunks([]) == sha256_hex(b"")


def test_no_source_hashes_by_hand():
    """Seeds derived from sha256 bits (``.digest()``) are another job and stay where they are."""
    bad = _hand_made(r"hexdigest\(|file_digest\(", "benchmark/contract/digest.py")
    assert not bad, "hash with benchmark.contract.digest:\n" + "\n".join(bad)


# --------------------------------------------------------------------------- Markdown tables


def test_tables_are_written_by_the_one_writer():
    rows = [["x", "1.5"], ["longer", "10"]]
    assert markdown_table(["a", "b"], rows) == "| a | b |\n| --- | --- |\n| x | 1.5 |\n| longer | 10 |"
    assert markdown_table(["a", "b"], rows, align="lr") == "| a | b |\n| --- | ---: |\n| x | 1.5 |\n| longer | 10 |"
    assert markdown_table(["a", "b"], rows, align="lr", pad=True) == (
        "| a      |   b |\n|--------|----:|\n| x      | 1.5 |\n| longer |  10 |")
    frame = pd.DataFrame({"n": [1, 2], "why": ["a|b", "c"]})
    assert frame_table(frame, ["why", "gone"], cell=lambda v: str(v).replace("|", "\\|")) == (
        "| why |\n| --- |\n| a\\|b |\n| c |")


def test_no_source_builds_a_table_by_hand():
    """A string that starts a table row (``"| "``, ``"|---"``) is a table built by hand."""
    bad = _hand_made(r"""(?<![\w])[rfb]*["']\|[ :-]""", "benchmark/present/text.py")
    assert not bad, "write Markdown tables with benchmark.present.text.markdown_table:\n" + "\n".join(bad)
