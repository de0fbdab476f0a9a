"""The examples of README.md and docs/: found, run and checked (tests/test_doc_examples.py;
docs/examples.md is the contributors' page).

An example is a fenced ``bash`` (``sh``, ``shell``, ``console``) or ``python`` (``py``) block. The
HTML comment on the line before it says how it is checked (invisible on GitHub and on the site)::

    <!-- example: prints="results: out/tiny/results.json" creates="out/tiny/report/report.html" -->
    <!-- example: skip reason="needs the Hub" -->
    <!-- example: shared prints="..." -->         run once per test session, outputs reused
    <!-- example: exit=1 prints="..." -->         the status it must exit with (default 0)
    <!-- example: timeout=600 prints="..." -->    seconds (default 300)

A block marked ``<!-- example: output -->`` (any language, usually ``text``) is what the runnable
block before it must print: each of its lines, in order (``...`` lines skipped). Every runnable
block needs an expectation (``prints``, ``creates`` or an output block) or a skip with its reason.

The blocks of one page run in order in one folder of their own (as a reader following the page
would), holding links to the checkout's folders (``benchmark/``, ``metrics/``, ``tests/``...), the
command line on ``PATH``, the checkout on ``PYTHONPATH``, the Hub switched off and the built-in
tiny models' cache of the test session.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python", "py"}
#: the checkout's entries linked into each page's folder (read by the examples, never written)
LINKED = ("benchmark", "metrics", "submissions", "dataset_builders", "tests", "bench", "docs")
DEFAULT_TIMEOUT = 300
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$")
DIRECTIVE = re.compile(r"^\s*<!--\s*example:(?P<body>.*?)-->\s*$")
ATTRIBUTE = re.compile(r'(?P<key>[\w-]+)(?:=(?:"(?P<quoted>[^"]*)"|(?P<bare>\S+)))?')
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
KNOWN = {"skip", "reason", "prints", "creates", "exit", "shared", "timeout", "output"}


@dataclasses.dataclass
class Example:
    """One runnable block of a page."""

    page: str  # relative to the checkout, e.g. "docs/getting_started.md"
    line: int  # of the opening fence, 1-based
    language: str  # "shell" or "python"
    code: str
    skip: str | None = None  # the reason, when skipped
    prints: list[str] = dataclasses.field(default_factory=list)
    creates: list[str] = dataclasses.field(default_factory=list)
    output: list[str] = dataclasses.field(default_factory=list)  # an output block's lines
    exit: int = 0
    shared: bool = False
    timeout: int = DEFAULT_TIMEOUT
    problem: str | None = None  # a directive that cannot be followed

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.language}\n{self.code}".encode()).hexdigest()[:16]


def parse_directive(body: str) -> tuple[dict[str, list[str]], str | None]:
    """``key=value`` pairs of a directive (a key may repeat) and a problem, if any."""
    found: dict[str, list[str]] = {}
    rest = ATTRIBUTE.sub("", body).strip()
    for m in ATTRIBUTE.finditer(body):
        value = m.group("quoted") if m.group("quoted") is not None else (m.group("bare") or "")
        found.setdefault(m.group("key"), []).append(value)
    unknown = sorted(set(found) - KNOWN)
    if unknown or rest:
        return found, f"unknown directive {' '.join(unknown) or rest!r} (known: {', '.join(sorted(KNOWN))})"
    return found, None


def _blocks(text: str):
    """(line of the fence, info string, body, directive body or None) of every fenced block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, indent, fence = i, m.group("indent"), m.group("fence")
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", lines[i]):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        d = DIRECTIVE.match(before)
        yield start + 1, m.group("info").strip().split(" ")[0].lower(), "\n".join(body), d.group("body") if d else None


def page_examples(page: Path, root: Path = ROOT) -> list[Example]:
    """The runnable blocks of ``page`` in order, with their directives (and output blocks) applied."""
    rel = page.relative_to(root).as_posix()
    examples: list[Example] = []
    for line, info, body, directive in _blocks(page.read_text(encoding="utf-8")):
        attrs, problem = parse_directive(directive) if directive is not None else ({}, None)
        if "output" in attrs:
            if not examples or examples[-1].output:
                examples.append(Example(rel, line, "output", body, problem="an output block follows no example"))
            else:
                examples[-1].output = [ln.strip() for ln in body.splitlines() if ln.strip() and ln.strip() != "..."]
            continue
        language = "shell" if info in SHELL else "python" if info in PYTHON else None
        if language is None:
            continue
        ex = Example(rel, line, language, body + "\n", problem=problem, prints=attrs.get("prints", []),
                     creates=attrs.get("creates", []), shared="shared" in attrs)
        if "skip" in attrs:
            ex.skip = (attrs.get("reason") or [""])[0]
            if not ex.skip:
                ex.problem = 'a skip needs its reason: <!-- example: skip reason="..." -->'
        try:
            ex.exit = int(attrs.get("exit", ["0"])[0])
            ex.timeout = int(attrs.get("timeout", [str(DEFAULT_TIMEOUT)])[0])
        except ValueError:
            ex.problem = "exit= and timeout= take whole numbers"
        examples.append(ex)
    return examples


def documentation_pages(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown page of docs/ (the hooks' folder aside)."""
    return [root / "README.md", *sorted(p for p in (root / "docs").rglob("*.md") if "_hooks" not in p.parts)]


def all_examples(root: Path = ROOT) -> list[Example]:
    return [ex for page in documentation_pages(root) for ex in page_examples(page, root)]


# --------------------------------------------------------------------------- running


def prepare_folder(folder: Path, root: Path = ROOT) -> Path:
    """A page's working folder: links to the checkout's folders the examples read."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        link = folder / name
        if not link.exists() and (root / name).exists():
            link.symlink_to(root / name, target_is_directory=True)
    return folder


def example_env(cache: Path, root: Path = ROOT) -> dict[str, str]:
    """The environment of every example: the test's interpreter and `t2ibench` first on PATH, the
    checkout importable, the Hub off (an example that needs it fails at once, it does not hang)."""
    env = {**os.environ}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH", "")) if p)
    env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", "T2IBENCH_CACHE": str(cache), "COLUMNS": "200",
                "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"})
    return env


def run_code(ex: Example, folder: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run ``ex`` in ``folder``: its exit status and what it printed (stdout and stderr together)."""
    if ex.language == "shell":
        argv = ["bash", "-e", "-o", "pipefail", "-c", ex.code]
    else:
        argv = [sys.executable, "-c", ex.code]
    try:
        proc = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=ex.timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return 124, out + f"\n[timed out after {ex.timeout} s]"
    return proc.returncode, proc.stdout + proc.stderr


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", ANSI.sub("", text)).strip()


def check_result(ex: Example, rc: int, output: str, folder: Path) -> list[str]:
    """What ``ex`` failed to do, one line each (empty: it did all it must)."""
    problems = []
    if rc != ex.exit:
        problems.append(f"exit status {rc}, expected {ex.exit}")
    seen = _normal(output)
    problems += [f"did not print {p!r}" for p in ex.prints if _normal(p) not in seen]
    problems += [f"did not create {c}" for c in ex.creates if not (folder / c).exists()]
    at = 0
    for line in ex.output:
        found = seen.find(_normal(line), at)
        if found < 0:
            problems.append(f"did not print the output block's line {line!r} (in order)")
            break
        at = found + len(_normal(line))
    return problems


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` (not through the links to the checkout): path -> (size, mtime)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
        for f in filenames:
            p = Path(dirpath) / f
            if not p.is_symlink():
                st = p.stat()
                out[p.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def save_shared(ex: Example, rc: int, output: str, folder: Path, before: dict, store: Path) -> None:
    """Keep what a shared example wrote (the files new or changed in ``folder``) and printed."""
    after = snapshot(folder)
    for rel in (r for r, s in after.items() if before.get(r) != s):
        (store / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(folder / rel, store / "files" / rel)
    (store / "files").mkdir(exist_ok=True)
    (store / "result.json").write_text(json.dumps({"rc": rc, "output": output, "code": ex.code}))


def load_shared(store: Path, folder: Path) -> tuple[int, str]:
    """A shared example's status and output, its files copied into ``folder``."""
    result = json.loads((store / "result.json").read_text())
    shutil.copytree(store / "files", folder, dirs_exist_ok=True, symlinks=True)
    return result["rc"], result["output"]


def describe(ex: Example, rc: int, output: str, problems: list[str]) -> str:
    code = "\n".join("    " + ln for ln in ex.code.rstrip().splitlines())
    tail = output[-4000:]
    return (f"{ex.id}: the example {'; '.join(problems)}\n{code}\n--- it printed (last 4000 characters, "
            f"exit status {rc}):\n{tail}")


def commands_in(code: str) -> list[str]:
    """The command lines of a shell block (continuations joined, comments dropped)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    out = []
    for line in joined.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split("#")[0].split()
        if words:
            out.append(" ".join(words))
    return out
