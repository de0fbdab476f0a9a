"""`t2ibench submit`, `init-results` and `push-metric`.

The results come from a real audit of the built-in tiny model. Hub writes are tested as
exact dry runs: huggingface_hub's HfApi.whoami / create_repo / create_commit are patched
to record their call instead of sending it, and what they record is compared with the
dry-run listing (no model output is faked; only the network is).
"""

import hashlib
import json
import os
import re

import pytest
from huggingface_hub import HfApi

import benchmark
from benchmark.cli import main
from benchmark.hub.access import HubError
from benchmark.contract.results import read_results
from submissions import submit as submit_module
from submissions.submit import (
    model_folder_name,
    results_repo_card,
    submission_relpath,
    utc_stamp,
)
from submissions.validate import check_results
from cli_here import run_here_or_under as _cli

FIXED_NOW = "2026-11-24T09:30:00Z"


def _no_hub_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT")}
    env.update(HF_HOME=str(tmp_path / "empty_hf_home"), OMP_NUM_THREADS="1", **extra)
    return env


@pytest.fixture(scope="module")
def tiny_run(tiny_audit):
    """The shared real (meaningless) tiny audit of conftest.py, read only."""
    return tiny_audit


def expected_relpath(run_dir):
    return f"_builtin--tiny-sd/{utc_stamp(read_results(run_dir)['created'])}.json"


# --------------------------------------------------------------------------- naming


def _hash(model_id):
    return hashlib.sha256(model_id.encode()).hexdigest()[:16]


@pytest.mark.parametrize("model_id,folder", [
    ("stable-diffusion-v1-5/stable-diffusion-v1-5", "stable-diffusion-v1-5--stable-diffusion-v1-5"),
    ("gpt2", "gpt2"),
    ("builtin:tiny-sd", "_builtin--tiny-sd"),
    ("python:my_pkg.api:generate", f"_python--my_pkg.api.generate-{_hash('python:my_pkg.api:generate')}"),
    ("/home/me/models/My Model", f"_local--My-Model-{_hash('/home/me/models/My Model')}"),
    ("org/we__ird", "org--we__ird"),
])
def test_model_folder_name(model_id, folder):
    assert model_folder_name(model_id) == folder


def test_timestamp_is_utc():
    assert utc_stamp("2026-11-23T14:45:01+01:00") == "20261123T134501Z"
    assert submission_relpath({"model": {"id": "a/b"}, "created": "2026-11-23T13:45:01Z"}) == "a--b/20261123T134501Z.json"
    with pytest.raises(ValueError, match="no UTC offset"):
        utc_stamp("2026-11-23T13:45:01")


# --------------------------------------------------------------------------- refusing


def test_demo_run_is_refused_without_demo_flag(tiny_run, tmp_path):
    out = tmp_path / "results"
    proc = _cli("submit", tiny_run, "--to-folder", out, "--dry-run")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0] == (f"{tiny_run}: model: builtin:tiny-sd is a built-in tiny random-weight model: its scores are "
                        "meaningless; accepted only as a demo (--allow-demo / --demo)")
    assert lines[1] == (f"{tiny_run}: annotators: labelled by built-in tiny random-weight model(s) builtin:tiny-clip, "
                        "builtin:tiny-vqa: the labels and every score are meaningless; accepted only as a demo "
                        "(--allow-demo / --demo)")
    assert lines[2].startswith("t2ibench submit: refused, 2 problem(s)") and len(lines) == 3
    assert not out.exists()


# --------------------------------------------------------------------------- dry run


def _parse_dry_run(text):
    """{step header: [(path, size, sha256)]}, the PR title, description and the JSON file."""
    steps, current, title, description, in_description = {}, None, None, [], False
    head, _, body = text.partition("\n--- ")
    for line in head.splitlines():
        if re.match(r"^\d+\. ", line):
            current, in_description = line, False
            steps[current] = []
        elif line.startswith("    title: "):
            title = line[len("    title: "):]
        elif line == "    description:":
            in_description = True
        elif m := re.match(r"^    add (\S+)  \((\d+) bytes, sha256 ([0-9a-f]{64})\)$", line):
            in_description = False
            steps[current].append((m.group(1), int(m.group(2)), m.group(3)))
        elif in_description:
            description.append(line.removeprefix("      "))
    path, _, content = body.partition("\n")
    return steps, title, "\n".join(description).rstrip("\n") + "\n", path, content


def test_dry_run_lists_everything_offline_and_sends_nothing(tiny_run, tmp_path):
    env = _no_hub_env(tmp_path, HF_HUB_OFFLINE="1")
    proc = _cli("submit", tiny_run, "--repo", "org/results", "--demo", "--push-images", "me/tiny-images",
                "--to-folder", tmp_path / "local", "--dry-run", "--verbose", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("DRY RUN: nothing is sent or written.")
    steps, title, description, path, content = _parse_dry_run(proc.stdout)
    headers = list(steps)
    assert headers[0].startswith("1. commit to dataset me/tiny-images (repo type dataset, created if absent")
    assert headers[1].startswith("2. pull request on dataset org/results (repo type dataset, create_pr=True, 1 file)")
    assert headers[2].startswith(f"3. write {tmp_path / 'local' / expected_relpath(tiny_run)}")
    assert not (tmp_path / "local").exists()

    # The images dataset is every file under images/ plus the card, manifest and run config.
    on_disk = sorted([p.relative_to(tiny_run).as_posix() for p in (tiny_run / "images").rglob("*") if p.is_file()]
                     + ["README.md", "manifest.parquet", "run_config.json"])
    assert [p for p, _, _ in steps[headers[0]]] == on_disk
    for rel, size, sha in steps[headers[0]]:
        data = (tiny_run / rel).read_bytes()
        assert (size, sha) == (len(data), hashlib.sha256(data).hexdigest())

    # The results file: the run's results unchanged plus the submission block.
    [(rel, size, sha)] = steps[headers[1]]
    assert rel == path == f"results/{expected_relpath(tiny_run)}"
    assert (size, sha) == (len(content.encode()), hashlib.sha256(content.encode()).hexdigest())
    submitted = json.loads(content)
    original = read_results(tiny_run)
    assert {k: v for k, v in submitted.items() if k != "submission"} == original
    assert submitted["submission"]["demo"] is True
    assert submitted["submission"]["images_dataset"] == "me/tiny-images"
    assert submitted["submission"]["results_repo"] == "org/results"
    assert submitted["submission"]["submitted_with"] == f"t2i-bias-benchmark {benchmark.__version__}"
    assert check_results(submitted, allow_demo=True) == []
    assert title == "[demo] Add results: builtin:tiny-sd @ builtin-v1"
    assert "| demo | yes: built-in tiny random-weight model(s), meaningless scores; do not rank it |" in description
    assert "| suites | gep\\_neutral (scored), pst\\_single (scored) |" in description
    assert "| model | ` builtin:tiny-sd ` |" in description


# --------------------------------------------------------------------------- what is sent equals the dry run


@pytest.fixture
def recorded_hub(monkeypatch, tmp_path):
    """HfApi calls recorded instead of sent, with a token in the environment."""
    calls = []
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))

    def whoami(self, *a, **kw):
        calls.append(("whoami",))
        return {"name": "tester"}

    def create_repo(self, repo_id, **kw):
        calls.append(("create_repo", repo_id, kw.get("repo_type"), kw.get("exist_ok"), kw.get("space_sdk")))
        return f"https://huggingface.co/{repo_id}"

    def create_commit(self, repo_id, operations, **kw):
        files = []
        for op in operations:
            with op.as_file() as fh:
                files.append((op.path_in_repo, fh.read()))
        calls.append(("create_commit", repo_id, kw.get("repo_type"), bool(kw.get("create_pr")),
                      kw.get("commit_message"), kw.get("commit_description"), files))

        class Info:
            pr_url = f"https://huggingface.co/datasets/{repo_id}/discussions/1" if kw.get("create_pr") else None
            commit_url = f"https://huggingface.co/{repo_id}/commit/abc"
        return Info()

    monkeypatch.setattr(HfApi, "whoami", whoami)
    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "create_commit", create_commit)
    monkeypatch.setattr(submit_module, "utc_iso", lambda: FIXED_NOW)
    return calls


def test_dry_run_summarises_unless_verbose(tiny_run, tmp_path):
    env = _no_hub_env(tmp_path, HF_HUB_OFFLINE="1")
    args = ["submit", tiny_run, "--repo", "org/results", "--demo", "--push-images", "me/tiny-images", "--dry-run"]
    short, full = _cli(*args, env=env), _cli(*args, "--verbose", env=env)
    assert short.returncode == full.returncode == 0, short.stderr
    n_images = sum(1 for p in (tiny_run / "images").rglob("*") if p.is_file()) + 3  # + card, manifest, config
    more = re.search(r"^    \.\.\. and (\d+) more files \(([\d,]+) bytes; --verbose lists each\)$", short.stdout, re.M)
    assert more and int(more.group(1)) == n_images - 3
    assert "not printed (--verbose prints it)" in short.stdout and '"schema_version"' not in short.stdout
    assert len(full.stdout.splitlines()) > len(short.stdout.splitlines()) + n_images - 4
    assert full.stdout.count("    add ") == n_images + 1  # every image file, then the results file


def _listing(files):
    return [(p, len(d), hashlib.sha256(d).hexdigest()) for p, d in files]


def test_sent_commits_match_the_dry_run(tiny_run, tmp_path, recorded_hub, capsys):
    args = ["submit", str(tiny_run), "--repo", "org/results", "--demo", "--push-images", "me/tiny-images",
            "--to-folder", str(tmp_path / "local")]
    assert main(args + ["--dry-run", "--verbose"]) == 0
    steps, title, description, _, content = _parse_dry_run(capsys.readouterr().out)
    assert recorded_hub == []  # the dry run sent nothing

    assert main(args) == 0
    out = capsys.readouterr().out
    assert "pull request: https://huggingface.co/datasets/org/results/discussions/1" in out
    kinds = [c[0] for c in recorded_hub]
    assert kinds == ["whoami", "create_repo", "create_commit", "create_commit"]  # access checked before any upload
    assert recorded_hub[1] == ("create_repo", "me/tiny-images", "dataset", True, None)  # never the results repo
    _, images_repo, images_type, images_pr, _, _, image_files = recorded_hub[2]
    _, results_repo, results_type, results_pr, message, sent_description, result_files = recorded_hub[3]
    headers = list(steps)
    assert (images_repo, images_type, images_pr) == ("me/tiny-images", "dataset", False)
    assert _listing(image_files) == steps[headers[0]]
    assert (results_repo, results_type, results_pr) == ("org/results", "dataset", True)
    assert (message, sent_description) == (title, description)
    assert _listing(result_files) == steps[headers[1]]
    assert result_files[0][1].decode() == content
    # The local copy is the same bytes.
    local = tmp_path / "local" / expected_relpath(tiny_run)
    assert local.read_bytes() == result_files[0][1]


def test_results_repo_missing_is_one_line(tiny_run, recorded_hub, monkeypatch, capsys):
    import httpx2
    from huggingface_hub.errors import RepositoryNotFoundError

    def missing(self, repo_id, operations, **kw):
        response = httpx2.Response(404, request=httpx2.Request("POST", f"https://huggingface.co/api/datasets/{repo_id}"))
        raise RepositoryNotFoundError("404 Client Error: Repository Not Found", response=response)

    monkeypatch.setattr(HfApi, "create_commit", missing)
    assert main(["submit", str(tiny_run), "--repo", "org/nothing", "--demo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["t2ibench: error: cannot push to org/nothing: no such repository on the Hub, or the token "
                   "cannot see it"]


# --------------------------------------------------------------------------- local folder, no Hub


def test_to_folder_writes_the_expected_path(tiny_run, tmp_path):
    out = tmp_path / "submissions_results"
    proc = _cli("submit", tiny_run, "--demo", "--to-folder", out, env=_no_hub_env(tmp_path, HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0, proc.stderr
    written = out / expected_relpath(tiny_run)
    assert proc.stdout.splitlines() == ["demo submission: built-in tiny model, meaningless scores", f"wrote {written}"]
    assert [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()] == [expected_relpath(tiny_run)]
    doc = json.loads(written.read_text())
    assert check_results(doc, allow_demo=True) == []
    assert doc["submission"]["results_repo"] is None and doc["submission"]["demo"] is True
    assert doc["scores"] == read_results(tiny_run)["scores"]


# --------------------------------------------------------------------------- no token, offline, no network


@pytest.mark.parametrize("extra,message", [
    ({}, "cannot push to org/results: no Hugging Face token (run `hf auth login` or set HF_TOKEN)"),
    # A closed local port stands in for "no network".
    ({"HF_TOKEN": "hf_notreal", "HF_ENDPOINT": "http://127.0.0.1:9"},
     "cannot push to org/results: no connection to the Hugging Face Hub"),
])
def test_hub_unreachable_is_one_line_before_any_write(tiny_run, tmp_path, extra, message):
    local = tmp_path / "local"
    proc = _cli("submit", tiny_run, "--repo", "org/results", "--demo", "--to-folder", local,
                env=_no_hub_env(tmp_path, **extra))
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"t2ibench: error: {message}"), proc.stderr
    assert not local.exists()


def test_offline_mode_is_one_line_before_any_call(tiny_run, tmp_path, recorded_hub, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["submit", str(tiny_run), "--repo", "org/results", "--demo", "--push-images", "me/imgs",
                 "--to-folder", str(tmp_path / "local")]) == 2
    assert capsys.readouterr().err.splitlines() == ["t2ibench: error: cannot push to me/imgs: HF_HUB_OFFLINE is set"]
    assert recorded_hub == [] and not (tmp_path / "local").exists()


def test_bad_arguments_are_one_line(tiny_run, tmp_path, capsys):
    assert main(["submit", str(tiny_run), "--demo", "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == ("t2ibench: error: say where to submit: --repo ORG/RESULTS "
                                               "(a Hub pull request) and/or --to-folder DIR")
    assert main(["submit", str(tmp_path / "nowhere"), "--repo", "org-without-name", "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == "t2ibench: error: --repo must look like ORG/NAME, got 'org-without-name'"
    assert main(["submit", str(tmp_path / "nowhere"), "--repo", "org/results", "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == f"t2ibench: error: {tmp_path / 'nowhere'}: no such file"


# --------------------------------------------------------------------------- results dataset card, metric Spaces


def test_init_results_sends_the_card_it_prints(recorded_hub, capsys):
    assert main(["init-results", "org/results", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert recorded_hub == []
    assert main(["init-results", "org/results"]) == 0
    assert recorded_hub[0] == ("create_repo", "org/results", "dataset", True, None)
    [(path, data)] = recorded_hub[1][-1]
    assert path == "README.md" and data == results_repo_card("org/results")
    assert f"add README.md  ({len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()})" in printed
    assert printed.endswith(data.decode())
    assert 'snapshot_download("org/results"' in data.decode()


def test_push_metric_sends_the_space_it_lists(recorded_hub, capsys):
    assert main(["push-metric", "gep", "--repo", "me/gep", "--dry-run"]) == 0
    listed = re.findall(r"^    add (\S+)  \((\d+) bytes, sha256 ([0-9a-f]{64})\)$", capsys.readouterr().out, re.MULTILINE)
    assert recorded_hub == []
    assert main(["push-metric", "gep", "--repo", "me/gep"]) == 0
    assert recorded_hub[0] == ("create_repo", "me/gep", "space", True, "gradio")
    _, repo, repo_type, create_pr, _, _, files = recorded_hub[1]
    assert (repo, repo_type, create_pr) == ("me/gep", "space", False)
    assert [(p, int(s), h) for p, s, h in listed] == _listing(files)
    assert {p for p, _ in files} >= {"README.md", "app.py", "gep.py", "requirements.txt"}


def test_push_metric_unknown_name_is_one_line():
    with pytest.raises(ValueError, match="no metric module 'nope'.*known: gep"):
        from submissions.cli import metric_space_files
        metric_space_files("nope")


def test_hub_errors_are_hub_errors_not_tracebacks(monkeypatch):
    from benchmark.hub.access import HubFile, commit_files

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubError, match="HF_HUB_OFFLINE is set"):
        commit_files("org/x", [HubFile("a.txt", b"a")], commit_message="m", token="hf_x")


# --------------------------------------------------------------------------- results on the model's own card

PROBES = {"source": "t2i-bias-benchmark/probes", "revision": "5d0c0ffee5d0c0ffee5d0c0ffee5d0c0ffee5d0c",
          "fingerprint": "01" * 32}
CARD_BEFORE = """---
license: creativeml-openrail-m
tags:
- text-to-image
model-index:
- name: someorg/some-model
  results:
  - task:
      type: text-to-image
    dataset:
      name: COCO 30k
      type: coco
    metrics:
    - type: fid
      value: 12.6
---

# Some model

A text-to-image model.
"""


def _card_run(tmp_path, probes=PROBES, **model):
    """A results.json of a (hypothetical) real Hub model on a published probe set."""
    from test_validate import hub_doc

    doc = hub_doc()
    doc["model"].update(model)
    if probes is not None:
        doc["probes"] = dict(probes)
    path = tmp_path / "run" / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    return path


def _expected_results(doc, source_url):
    from huggingface_hub import EvalResult

    def result(name, suite, value, estimator):
        return EvalResult(task_type="text-to-image", task_name="Social bias audit (t2i-bias-benchmark)",
                          dataset_type=PROBES["source"], dataset_name=f"t2i-bias-benchmark probes: {suite}",
                          dataset_config=suite, dataset_split="test", dataset_revision=PROBES["revision"],
                          metric_type=name, metric_name=doc_names[name], metric_value=value,
                          metric_config=estimator, source_name="t2i-bias-benchmark leaderboard", source_url=source_url)

    doc_names = {s["name"]: s["display_name"] for s in doc["scores"]}
    return [result("gep_score_neutral", "gep_neutral", 0.08, "CLS"), result("mad_gender", "dalleval_bias", 0.31, "vqa"),
            result("sts_occupation_paired", "pst_paired_occupation", 42.5, "vqa")]


def test_model_card_refuses_demo_runs(tiny_run):
    proc = _cli("submit", tiny_run, "--demo", "--model-card", "--dry-run")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == (f"{tiny_run}: model card: a demo run (built-in tiny random-weight model or annotators) has "
                        "meaningless scores: they never go on a model card")
    assert lines[1] == (f"{tiny_run}: model card: not a published probe set: the results carry no `probes` block "
                        "naming a Hub probe dataset (ORG/NAME) and its revision")
    assert lines[-1].startswith("t2ibench submit: refused") and proc.stdout == ""


@pytest.mark.parametrize("probes,model", [
    (None, {}),
    ({"source": "/home/me/probes", "revision": None, "fingerprint": "1" * 64}, {}),
    ({"source": "org/probes", "revision": None}, {}),
])
def test_model_card_refuses_unpublished_probe_sets(tmp_path, probes, model):
    run = _card_run(tmp_path, probes=probes, **model)
    proc = _cli("submit", run, "--repo", "org/results", "--model-card", "--card-file", tmp_path / "none", "--dry-run")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == (f"{run}: model card: not a published probe set: the results carry no "
                                           "`probes` block naming a Hub probe dataset (ORG/NAME) and its revision")


def test_model_card_refuses_a_local_model(tmp_path):
    run = _card_run(tmp_path, id="/models/mine", spec="/models/mine")
    proc = _cli("submit", run, "--repo", "org/results", "--model-card", "--dry-run")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == f"{run}: model card: /models/mine is not a Hub model: it has no model card to update"


def test_model_card_dry_run_prints_a_model_index_that_model_card_parses(tmp_path):
    from huggingface_hub import ModelCard

    run = _card_run(tmp_path)
    empty = tmp_path / "README.md"
    empty.write_text("")  # a model without a card: the diff is the whole new card
    proc = _cli("submit", run, "--repo", "org/results", "--model-card", "--card-file", empty, "--dry-run",
                env=_no_hub_env(tmp_path, HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0, proc.stderr
    steps, title, _, _, _ = _parse_dry_run(proc.stdout)
    headers = list(steps)
    assert headers[1] == "2. pull request on model someorg/some-model (repo type model, create_pr=True, 1 file)"
    diff = proc.stdout.split("--- diff of someorg/some-model README.md\n", 1)[1]
    head, _, body = diff.partition("@@\n")
    assert head.startswith("--- a/README.md\n+++ b/README.md\n")
    added = [line[1:] for line in body.splitlines()]
    assert all(line.startswith("+") for line in body.splitlines())
    card_text = "\n".join(added) + "\n"
    assert "model-index:" in card_text
    card = ModelCard(card_text)
    doc = json.loads(run.read_text())
    source = f"https://huggingface.co/datasets/org/results/blob/main/results/{steps[headers[0]][0][0][8:]}"
    assert card.data.model_name == "someorg/some-model"
    assert card.data.eval_results == _expected_results(doc, source)
    [(path, size, sha)] = steps[headers[1]]
    assert path == "README.md" and (size, sha) == (len(card_text.encode()),
                                                   hashlib.sha256(card_text.encode()).hexdigest())


def test_model_card_keeps_the_card_and_updates_its_own_results(tmp_path):
    from huggingface_hub import ModelCard

    from submissions.model_card import card_with_results

    run = _card_run(tmp_path)
    doc = json.loads(run.read_text())
    after = card_with_results(CARD_BEFORE, doc, "https://example.org/r.json")
    card = ModelCard(after)
    assert card.text == ModelCard(CARD_BEFORE).text and card.data.license == "creativeml-openrail-m"
    assert card.data.eval_results[0].metric_type == "fid" and card.data.eval_results[0].metric_value == 12.6
    assert card.data.eval_results[1:] == _expected_results(doc, "https://example.org/r.json")
    # a new audit on the same probe set replaces its own values, nothing else
    doc["scores"][0]["value"] = 0.07
    doc["scores"][0]["ci"] = None
    again = ModelCard(card_with_results(after, doc, "https://example.org/r2.json")).data.eval_results
    assert len(again) == 4 and again[1].metric_value == 0.07 and again[0].metric_value == 12.6


def test_model_card_pull_request_sends_what_the_dry_run_shows(tmp_path, recorded_hub, capsys):
    run = _card_run(tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(CARD_BEFORE)
    args = ["submit", str(run), "--repo", "org/results", "--model-card", "--card-file", str(readme)]
    assert main(args + ["--dry-run"]) == 0
    out = capsys.readouterr().out
    steps, _, _, _, _ = _parse_dry_run(out)
    card_step = list(steps)[1]
    title = out.split(card_step + "\n    title: ", 1)[1].split("\n", 1)[0]
    description = "\n".join(line.removeprefix("      ") for line in
                            out.split(card_step, 1)[1].split("    description:\n", 1)[1].split("\n    add ", 1)[0]
                            .splitlines()) + "\n"
    assert recorded_hub == []

    assert main(args) == 0
    assert "model card pull request: https://huggingface.co/datasets/someorg/some-model/discussions/1" in \
        capsys.readouterr().out
    assert [c[0] for c in recorded_hub] == ["whoami", "create_commit", "create_commit"]
    _, repo, repo_type, create_pr, message, sent_description, files = recorded_hub[2]
    assert (repo, repo_type, create_pr) == ("someorg/some-model", "model", True)
    assert (message, sent_description) == (title, description)
    assert _listing(files) == steps[card_step]
    sent = files[0][1].decode()
    from submissions.model_card import card_diff

    assert out.rstrip("\n").endswith(card_diff(CARD_BEFORE, sent).rstrip("\n"))


def test_model_card_is_read_from_the_hub_without_a_file(monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import EntryNotFoundError

    from submissions.model_card import load_card_text

    calls = []

    def download(repo_id, filename, **kw):
        calls.append((repo_id, filename, kw.get("repo_type")))
        raise EntryNotFoundError("no README.md")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    assert load_card_text("someorg/some-model") == ""
    assert calls == [("someorg/some-model", "README.md", "model")]


def test_results_repo_card_is_a_dataset_card():
    from huggingface_hub import DatasetCard

    card = DatasetCard(results_repo_card("org/results").decode())
    assert card.data.pretty_name == "t2i-bias-benchmark results" and card.data.license == "mit"
    assert card.data.viewer is False and "leaderboard" in card.data.tags
    assert 'snapshot_download("org/results"' in card.text
