"""The docs show only the command line that exists: every ``t2ibench`` command in a shell block
of README.md or docs/ (run or skipped, synopses too) and in an inline code span names a command
``t2ibench --help`` lists and only options that command takes (``--model``, ``--limit``...), so
a renamed or removed option fails here, not in a reader's terminal."""

from __future__ import annotations

import argparse
import re

import pytest

from benchmark.cli import build_parser
from doc_examples import ROOT, all_examples, commands_in, documentation_pages

INLINE = re.compile(r"(?<![`\\])`(t2ibench [^`\\]+)`(?!`)")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_-]*)")
START = re.compile(r"(?:^|\s)(?:t2ibench|-m benchmark\.cli|python -m benchmark\.cli)\s+(.*)$")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def command_problems(text: str, parser: argparse.ArgumentParser) -> list[str]:
    """What is wrong with the ``t2ibench`` command line ``text`` (everything after ``t2ibench``):
    an unknown command, or options its command does not take."""
    words = [w for w in re.split(r"[\s\[\]()|]+", text) if w]
    global_options = _options(parser)
    while words and words[0] in global_options:  # t2ibench --plugin MODULE COMMAND ...
        words = words[2:] if words[0] == "--plugin" else words[1:]
    if not words or words[0].startswith("-") or words[0] == "..." or words[0].rstrip(":").isupper():
        return []  # `t2ibench --help`, `t2ibench COMMAND ...`: no command named
    here, path = parser, []
    while words and (subs := _subparsers(here)):
        if words[0] not in subs:
            if not path:
                return [f"unknown command {words[0]!r}"]
            break  # a command with subcommands and options of its own (`leaderboard --results DIR`)
        path.append(words.pop(0))
        here = subs[path[-1]]
    known = _options(here) | global_options
    unknown = sorted({o for o in OPTION.findall(" ".join(words)) if o not in known})
    return [f"t2ibench {' '.join(path)}: no option {o}" for o in unknown]


def documented_commands() -> list[tuple[str, str]]:
    """(where, command line after ``t2ibench``) of every command the docs show."""
    found = []
    for ex in all_examples():
        if ex.language != "shell":
            continue
        for line in commands_in(ex.code):
            for part in re.split(r"\s(?:&&|\|\||;)\s", line):
                m = START.search(part)
                if m:
                    found.append((ex.id, m.group(1)))
    for page in documentation_pages():
        text = page.read_text(encoding="utf-8")
        text = re.sub(r"^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1[ \t]*$", "", text, flags=re.S | re.M)  # blocks: done above
        rel = page.relative_to(ROOT).as_posix()
        for m in INLINE.finditer(re.sub(r"\s*\n\s*", " ", text)):
            found.append((rel, m.group(1)[len("t2ibench "):]))
    return found


@pytest.fixture(scope="module")
def parser():
    return build_parser()


def test_every_documented_command_and_option_exists(parser):
    commands = documented_commands()
    assert len(commands) > 150  # the pages show hundreds; a parser that finds none is broken
    bad = [f"{where}: t2ibench {text}\n    {problem}" for where, text in commands
           for problem in command_problems(text, parser)]
    assert not bad, "the docs show commands or options t2ibench does not have (t2ibench COMMAND --help):\n" + \
        "\n".join(bad)


def test_the_check_finds_a_renamed_option_and_an_unknown_command(parser):
    assert command_problems("run --model builtin:tiny-sd --out out/x --limt 4", parser) == [
        "t2ibench run: no option --limt"]
    assert command_problems("probes build --out DIR [--suites ...] [--confg FAMILY=YAML]", parser) == [
        "t2ibench probes build: no option --confg"]
    assert command_problems("compres out/a out/b", parser) == ["unknown command 'compres'"]
    assert command_problems("--plugin my_suites run --model MODEL --suites x --out runs/short", parser) == []
    assert command_problems("leaderboard build-contents DIR", parser) == []


def test_the_command_line_page_lists_every_command(parser):
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    commands = [f"t2ibench {name}" for name, sub in _subparsers(parser).items()]
    commands += [f"t2ibench {name} {inner}" for name, sub in _subparsers(parser).items() for inner in _subparsers(sub)]
    assert [c for c in commands if not re.search(rf"^{re.escape(c)}\b", text, re.M)] == []
