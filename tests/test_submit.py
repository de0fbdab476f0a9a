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
import subprocess
import sys

import pytest
from huggingface_hub import HfApi

import benchmark
from benchmark.cli import main
from benchmark.hub import HubError
from benchmark.results import read_results
from submissions import submit as submit_module
from submissions.submit import (
    model_folder_name,
    results_repo_card,
    submission_relpath,
    utc_stamp,
)
from submissions.validate import check_results

FIXED_NOW = "2026-11-24T09:30:00Z"


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *map(str, args)], capture_output=True, text=True,
                          env=env or {**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)


def _no_hub_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT")}
    env.update(HF_HOME=str(tmp_path / "empty_hf_home"), OMP_NUM_THREADS="1", **extra)
    return env


@pytest.fixture(scope="module")
def tiny_run(tiny_audit):
    """The shared real (meaningless) tiny audit of conftest.py, read only."""
    return tiny_audit


def expected_relpath(run_dir):
    return f"builtin__tiny-sd/{utc_stamp(read_results(run_dir)['created'])}.json"


# --------------------------------------------------------------------------- naming


@pytest.mark.parametrize("model_id,folder", [
    ("stable-diffusion-v1-5/stable-diffusion-v1-5", "stable-diffusion-v1-5__stable-diffusion-v1-5"),
    ("builtin:tiny-sd", "builtin__tiny-sd"),
    ("python:my_pkg.api:generate", "python__my_pkg.api.generate"),
    ("/home/me/models/My Model", "local__My-Model"),
    ("org/we__ird name", "org__we_ird-name"),
])
def test_model_folder_name(model_id, folder):
    assert model_folder_name(model_id) == folder


def test_timestamp_is_utc():
    assert utc_stamp("2026-11-23T14:45:01+01:00") == "20261123T134501Z"
    assert submission_relpath({"model": {"id": "a/b"}, "created": "2026-11-23T13:45:01Z"}) == "a__b/20261123T134501Z.json"
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
    assert lines[1].startswith("t2ibench submit: refused, 1 problem(s)") and len(lines) == 2
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
                "--to-folder", tmp_path / "local", "--dry-run", env=env)
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
    assert "| demo | yes: built-in tiny random-weight model, meaningless scores; do not rank it |" in description
    assert "| suites | gep_neutral (scored), pst_single (scored) |" in description


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
    monkeypatch.setattr(submit_module, "utc_now", lambda: FIXED_NOW)
    return calls


def _listing(files):
    return [(p, len(d), hashlib.sha256(d).hexdigest()) for p, d in files]


def test_sent_commits_match_the_dry_run(tiny_run, tmp_path, recorded_hub, capsys):
    args = ["submit", str(tiny_run), "--repo", "org/results", "--demo", "--push-images", "me/tiny-images",
            "--to-folder", str(tmp_path / "local")]
    assert main(args + ["--dry-run"]) == 0
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
    assert capsys.readouterr().err.strip() == (f"t2ibench: error: {tmp_path / 'nowhere'}: no such file "
                                               f"{tmp_path / 'nowhere'}")


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
    from benchmark.hub import HubFile, commit_files

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubError, match="HF_HUB_OFFLINE is set"):
        commit_files("org/x", [HubFile("a.txt", b"a")], commit_message="m", token="hf_x")
