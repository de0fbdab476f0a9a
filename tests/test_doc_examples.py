"""Every shell and Python example of README.md and docs/ runs on the built-in tiny models and
prints or writes what its page says, or is skipped with the reason its page gives
(tests/doc_examples.py says how a page marks them; docs/examples.md is the contributors' page).

Each example is one test, ``README.md:57``; the examples of one page run in order in one folder,
and an example marked ``shared`` (the tiny audit the tour and the pages build on) runs once per
test session, its files copied into every page that shows it."""

from __future__ import annotations

import pytest

from doc_examples import (
    Example, all_examples, check_result, describe, example_env, load_shared, page_examples, prepare_folder,
    run_code, save_shared, snapshot,
)
from shared_folders import shared_across_workers

EXAMPLES = all_examples()
#: page -> the outcome of each of its examples run so far (index -> problems; [] = passed)
_RAN: dict[str, dict[int, list[str]]] = {}
_SHARED: dict[str, object] = {}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Each page's folder, made on first use."""
    folders: dict[str, object] = {}

    def folder(page: str):
        if page not in folders:
            folders[page] = prepare_folder(tmp_path_factory.mktemp("example-" + page.replace("/", "-")))
        return folders[page]

    return folder


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return example_env(tmp_path_factory.getbasetemp() / "t2ibench-cache")


def _run(ex: Example, folder, env, tmp_path_factory) -> tuple[int, str, list[str]]:
    if not ex.shared:
        rc, output = run_code(ex, folder, env)
        return rc, output, check_result(ex, rc, output, folder)

    def build(store):
        before = snapshot(folder)
        rc, output = run_code(ex, folder, env)
        save_shared(ex, rc, output, folder, before, store)

    if ex.key not in _SHARED:
        _SHARED[ex.key] = shared_across_workers(tmp_path_factory, f"example-{ex.key}", build)
    rc, output = load_shared(_SHARED[ex.key], folder)
    return rc, output, check_result(ex, rc, output, folder)


def _run_page_up_to(ex: Example, index: int, pages, env, tmp_path_factory) -> list[str]:
    """Run the page's examples before ``index`` not yet run (a test selected alone still finds
    what they write), then this one: its problems."""
    done = _RAN.setdefault(ex.page, {})
    siblings = [e for e in EXAMPLES if e.page == ex.page]
    folder = pages(ex.page)
    for i, sibling in enumerate(siblings[:index + 1]):
        if i in done or sibling.skip is not None or sibling.problem:
            continue
        rc, output, problems = _run(sibling, folder, env, tmp_path_factory)
        done[i] = [describe(sibling, rc, output, problems)] if problems else []
    earlier = [p for i in range(index) for p in done.get(i, [])]
    if done[index] and earlier:
        return done[index] + [f"(an earlier example of {ex.page} failed too, which may be why)"]
    return done[index]


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[ex.id for ex in EXAMPLES])
def test_example(index, pages, env, tmp_path_factory):
    ex = EXAMPLES[index]
    if ex.problem:
        pytest.fail(f"{ex.id}: {ex.problem}")
    if ex.skip is not None:
        pytest.skip(f"{ex.id}: {ex.skip}")
    if not (ex.prints or ex.creates or ex.output):
        pytest.fail(f"{ex.id}: say what this example must print (<!-- example: prints=\"...\" -->) or write "
                    f"(creates=\"PATH\"), or skip it with its reason (skip reason=\"...\")")
    position = [e for e in EXAMPLES if e.page == ex.page].index(ex)
    problems = _run_page_up_to(ex, position, pages, env, tmp_path_factory)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- the runner itself


PAGE = """# A page

<!-- example: prints="hello" creates="out/a.txt" -->
```bash
mkdir -p out && echo hello | tee out/a.txt
```

- in a list:

  <!-- example: exit=3 prints="three" -->
  ```sh
  echo three; exit 3
  ```

```python
print("no directive")
```

<!-- example: output -->
```text
no directive
```

<!-- example: skip reason="needs the Hub" -->
```bash
t2ibench run --model org/model --out runs/x
```

<!-- example: skip -->
```python
pass
```

<!-- example: prints=x frobnicate -->
```bash
true
```

```json
{"not": "an example"}
```
"""


def test_the_runner_reads_directives_lists_and_output_blocks(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(PAGE)
    found = page_examples(tmp_path / "README.md", tmp_path)
    assert [(e.line, e.language) for e in found] == [(4, "shell"), (11, "shell"), (15, "python"), (25, "shell"),
                                                      (30, "python"), (35, "shell")]
    first, listed, plain, hub, bare, bad = found
    assert first.prints == ["hello"] and first.creates == ["out/a.txt"] and first.problem is None
    assert listed.exit == 3 and listed.code == "echo three; exit 3\n"
    assert plain.output == ["no directive"] and not plain.prints
    assert hub.skip == "needs the Hub"
    assert "needs its reason" in bare.problem
    assert "frobnicate" in bad.problem


def test_the_runner_fails_an_example_that_does_not_do_what_its_page_says(tmp_path):
    (tmp_path / "README.md").write_text(PAGE)
    first, listed, plain, *_ = page_examples(tmp_path / "README.md", tmp_path)
    env = example_env(tmp_path / "cache")
    rc, output = run_code(first, tmp_path, env)
    assert check_result(first, rc, output, tmp_path) == []
    assert (tmp_path / "out" / "a.txt").read_text() == "hello\n"
    rc, output = run_code(listed, tmp_path, env)
    assert (rc, check_result(listed, rc, output, tmp_path)) == (3, [])
    listed.exit, listed.prints, listed.creates = 0, ["four"], ["out/b.txt"]
    assert check_result(listed, rc, output, tmp_path) == [
        "exit status 3, expected 0", "did not print 'four'", "did not create out/b.txt"]
    rc, output = run_code(plain, tmp_path, env)
    assert check_result(plain, rc, output, tmp_path) == []
    plain.output = ["directive", "no"]  # out of order
    assert check_result(plain, rc, output, tmp_path) == ["did not print the output block's line 'no' (in order)"]
    slow = Example("README.md", 1, "shell", "sleep 5\n", prints=["x"], timeout=1)
    rc, output = run_code(slow, tmp_path, env)
    assert rc == 124 and "timed out after 1 s" in output


def test_every_page_s_examples_are_collected():
    pages = {ex.page for ex in EXAMPLES}
    assert "README.md" in pages and "docs/getting_started.md" in pages
    assert sum(ex.skip is None for ex in EXAMPLES) >= 20
