"""The queue on the Hub, tested against the exact huggingface_hub calls.

HfApi's methods are patched onto a small in-memory dataset with commits (``FakeHub``):
``create_commit`` with a ``parent_commit`` that is not the head is refused with HTTP 412,
as the Hub does. Only the network is replaced; the audit is a copy of one real tiny audit
(conftest's ``tiny_audit``) so the results that are posted are real results.
"""

import datetime as dt
import fnmatch
import hashlib
import json
import shutil
from types import SimpleNamespace

import httpx2
import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError, RemoteEntryNotFoundError

from benchmark.cli import main
from submissions import request_store
from submissions.request_store import HubRequestStore
from submissions.requests import FINISHED, PENDING, RUNNING, RequestRecord
from benchmark.contract.times import utc_iso_ms
from submissions.submit import model_folder_name
from submissions.validate import check_results
from submissions.worker import work_once
from submissions.worker_claims import claim_next, owned_by, requeue_stale, update_request
from submissions.worker_options import WorkerOptions

REQUESTS = "org/requests"
RESULTS = "org/results"
MODEL_SHA = "0123456789abcdef0123456789abcdef01234567"
PATTERNS = ("requests/*/*.json",)


def _error(status, cls=HfHubHTTPError):
    request = httpx2.Request("POST", f"https://huggingface.co/api/datasets/{REQUESTS}/commit/main")
    return cls(f"{status} Client Error", response=httpx2.Response(status, request=request))


class FakeHub:
    """One dataset with a linear history of commits (the requests), plus pull requests on others."""

    def __init__(self, root):
        self.root = root
        self.history = [("0" * 40, {})]
        self.calls, self.prs = [], []
        self.before_commit = None  # called once, before the next commit to the requests dataset
        self.lag = 0  # repo_info answers this many times with the previous head after a refused commit

    @property
    def head(self):
        return self.history[-1][0]

    def files_at(self, sha):
        return next(files for s, files in self.history if s == sha)

    def apply(self, files):
        new = {**self.history[-1][1], **files}
        sha = hashlib.sha1(f"{len(self.history)}{sorted(new.items())}".encode()).hexdigest()
        self.history.append((sha, new))
        return sha

    # HfApi methods (self is the fake; api the patched HfApi)
    def repo_info(self, api, repo_id, *, repo_type=None, **kw):
        self.calls.append(("repo_info", repo_id, repo_type))
        if self.lag:
            self.lag -= 1
            return SimpleNamespace(sha=self.history[-2][0])
        return SimpleNamespace(sha=self.head)

    def snapshot_download(self, api, repo_id, *, repo_type=None, revision=None, allow_patterns=None, **kw):
        self.calls.append(("snapshot_download", repo_id, repo_type, revision, tuple(allow_patterns)))
        folder = self.root / "snapshots" / revision
        for path, data in self.files_at(revision).items():
            if any(fnmatch.fnmatch(path, p) for p in allow_patterns):
                (folder / path).parent.mkdir(parents=True, exist_ok=True)
                (folder / path).write_bytes(data)
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder)

    def hf_hub_download(self, api, repo_id, filename, *, repo_type=None, revision=None, **kw):
        self.calls.append(("hf_hub_download", repo_id, filename, repo_type, revision))
        files = self.files_at(revision) if repo_id == REQUESTS else self.results_files(repo_id, revision)
        if filename not in files:
            raise _error(404, RemoteEntryNotFoundError)
        out = self.root / "downloads" / revision / filename
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(files[filename])
        return str(out)

    def create_commit(self, api, repo_id, operations, *, commit_message, repo_type=None, parent_commit=None,
                      create_pr=False, commit_description=None, **kw):
        files = {}
        for op in operations:
            with op.as_file() as fh:
                files[op.path_in_repo] = fh.read()
        self.calls.append(("create_commit", repo_id, repo_type, tuple(sorted(files)), parent_commit, bool(create_pr),
                           commit_message))
        if repo_id != REQUESTS:
            self.prs.append((repo_id, files, commit_message, commit_description))
            return SimpleNamespace(oid="f" * 40, pr_url=f"https://huggingface.co/datasets/{repo_id}/discussions/"
                                   f"{len(self.prs)}", commit_url=None)
        if self.before_commit:
            hook, self.before_commit = self.before_commit, None
            hook()
        assert parent_commit is not None and len(parent_commit) == 40
        if parent_commit != self.head:
            self.lag = self.lag_after_refusal
            raise _error(412)
        sha = self.apply(files)
        return SimpleNamespace(oid=sha, commit_url=f"https://huggingface.co/datasets/{repo_id}/commit/{sha}",
                               pr_url=None)

    lag_after_refusal = 0

    # The results dataset: an empty main branch and the pull requests opened by the fake's one user.
    def results_files(self, repo_id, revision):
        if revision == "main":
            return {}
        number = int(revision.rsplit("/", 1)[-1])
        repo, files, *_ = self.prs[number - 1]
        return files if repo == repo_id else {}

    def get_repo_discussions(self, api, repo_id, *, repo_type=None, discussion_type=None, author=None, **kw):
        self.calls.append(("get_repo_discussions", repo_id, discussion_type, author))
        return iter([SimpleNamespace(git_reference=f"refs/pr/{i}", url=f"https://huggingface.co/datasets/{repo_id}/"
                                     f"discussions/{i}") for i, pr in enumerate(self.prs, 1) if pr[0] == repo_id])

    def file_exists(self, api, repo_id, filename, *, repo_type=None, revision=None, **kw):
        self.calls.append(("file_exists", repo_id, filename, revision))
        return filename in self.results_files(repo_id, revision)

    def whoami(self, api, **kw):
        self.calls.append(("whoami",))
        return {"name": "maintainer"}

    def model_info(self, api, repo_id, *, revision=None, **kw):
        self.calls.append(("model_info", repo_id, revision))
        return SimpleNamespace(id=repo_id, sha=MODEL_SHA, private=False, disabled=False, pipeline_tag="text-to-image",
                               siblings=[SimpleNamespace(rfilename="model_index.json")])

    def record(self, path, sha=None):
        return json.loads(self.files_at(sha or self.head)[path])


@pytest.fixture
def hub(monkeypatch, tmp_path):
    fake = FakeHub(tmp_path)
    for name in ("repo_info", "snapshot_download", "hf_hub_download", "create_commit", "whoami", "model_info",
                 "get_repo_discussions", "file_exists"):
        monkeypatch.setattr(HfApi, name, lambda api, *a, _n=name, **kw: getattr(fake, _n)(api, *a, **kw))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    slept = []
    monkeypatch.setattr(request_store, "sleep", slept.append)
    fake.slept = slept
    return fake


def _seed(hub, *records):
    hub.history = [("0" * 40, {r.path: r.dumps() for r in records})]


def _demo(**kw):
    kw = {"submitter": "dee", "submitted_at": "2026-11-24T09:31:00.000Z", **kw}
    return RequestRecord(model_id="builtin:tiny-sd", revision="builtin-v1", commit="builtin-v1", demo=True, **kw)


def _hub_model(model="acme/painter", **kw):
    kw = {"submitter": "ann", "submitted_at": "2026-11-24T09:30:00.000Z", **kw}
    return RequestRecord(model_id=model, revision="main", commit=MODEL_SHA, **kw)


# --------------------------------------------------------------------------- requesting


def test_request_is_one_commit_on_the_head_it_read(hub, capsys):
    args = ["request", "acme/painter", "--repo", REQUESTS, "--set", "num_inference_steps=25"]
    assert main(args + ["--dry-run", "--submitter", "ann"]) == 0
    printed = capsys.readouterr().out
    path = f"requests/acme--painter/{MODEL_SHA}.json"
    h0 = hub.head
    assert printed.startswith(f"DRY RUN: nothing is written.\n\nwould write {path} in dataset {REQUESTS}  (")
    assert f", parent_commit {h0})" in printed.splitlines()[2]
    dry = json.loads(printed.split("\n\n", 2)[2])
    assert hub.calls == [("model_info", "acme/painter", "main"), ("repo_info", REQUESTS, "dataset"),
                         ("snapshot_download", REQUESTS, "dataset", h0, PATTERNS)]
    hub.calls.clear()

    assert main(args) == 0  # the submitter is the token's Hub user
    assert capsys.readouterr().out.splitlines()[0] == (f"queued acme/painter @ main (commit {MODEL_SHA}) as PENDING: "
                                                       f"{path} in dataset {REQUESTS}")
    assert hub.calls == [("whoami",), ("model_info", "acme/painter", "main"), ("repo_info", REQUESTS, "dataset"),
                         ("snapshot_download", REQUESTS, "dataset", h0, PATTERNS),
                         ("create_commit", REQUESTS, "dataset", (path,), h0, False,
                          f"Request evaluation: acme/painter @ {MODEL_SHA}")]
    sent = hub.record(path)
    assert sent["submitter"] == "maintainer" and sent["status"] == PENDING
    assert {k: v for k, v in sent.items() if k not in ("submitted_at", "submitter")} == \
        {k: v for k, v in dry.items() if k not in ("submitted_at", "submitter")}


def test_request_refused_commit_reads_again_and_finds_the_duplicate(hub, capsys):
    # Between our read and our commit, someone else queues the same model commit.
    hub.before_commit = lambda: hub.apply({_hub_model(submitter="eve").path: _hub_model(submitter="eve").dumps()})
    h0 = hub.head
    assert main(["request", "acme/painter", "--repo", REQUESTS, "--submitter", "ann"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"t2ibench: error: acme/painter at commit {MODEL_SHA} is already queued (PENDING, submitted "
        "2026-11-24T09:30:00.000Z by eve)"]
    commits = [c for c in hub.calls if c[0] == "create_commit"]
    assert [c[4] for c in commits] == [h0]  # one refused commit (412), then a fresh read
    assert hub.calls[-2:] == [("repo_info", REQUESTS, "dataset"),
                              ("snapshot_download", REQUESTS, "dataset", hub.head, PATTERNS)]


# --------------------------------------------------------------------------- the worker


def _copy_audit(tiny_audit):
    def audit(record, opts):
        run_dir = opts.runs_dir / record.request_id
        shutil.copytree(tiny_audit, run_dir)
        return SimpleNamespace(results_path=run_dir / "results.json", main_process=True)
    return audit


def test_worker_refused_claim_takes_the_next_request(hub, tmp_path, tiny_audit):
    older, newer = _hub_model(), _demo()
    _seed(hub, older, newer)
    h0 = hub.head

    def other_worker_claims_first():
        now = utc_iso_ms()
        rival = older.replace(status=RUNNING, worker_id="rival", started_at=now, heartbeat_at=now)
        hub.apply({older.path: rival.dumps()})

    hub.before_commit = other_worker_claims_first
    lines = []
    opts = WorkerOptions(worker_id="gpu-1", runs_dir=tmp_path / "runs", results_repo=RESULTS, heartbeat_timeout=600,
                         log=lines.append)
    outcome = work_once(HubRequestStore(REQUESTS), opts, audit=_copy_audit(tiny_audit))
    assert outcome.status == "finished"
    h1, h2, h3, h4 = [sha for sha, _ in hub.history[1:]]
    snapshot = lambda sha: [("repo_info", REQUESTS, "dataset"),  # noqa: E731
                            ("snapshot_download", REQUESTS, "dataset", sha, PATTERNS)]
    [(*_, results_path_files, _, _, pr_title)] = [c for c in hub.calls if c[0] == "create_commit" and c[1] == RESULTS]
    assert hub.calls == [
        *snapshot(h0),  # re-queue pass: nothing stale
        *snapshot(h0),  # claim pass
        ("create_commit", REQUESTS, "dataset", (older.path,), h0, False,
         f"Claim {older.request_id} (maintainers' worker gpu-1)"),  # refused: the rival's claim landed (h1)
        *snapshot(h1),
        ("create_commit", REQUESTS, "dataset", (newer.path,), h1, False,
         f"Claim {newer.request_id} (maintainers' worker gpu-1)"),
        # Results an earlier attempt posted? Main, then the pull requests of the worker's own user: none.
        ("whoami",), ("get_repo_discussions", RESULTS, "pull_request", "maintainer"),
        ("file_exists", RESULTS, results_path_files[0], "main"),
        ("create_commit", REQUESTS, "dataset", (newer.path,), h2, False, f"Heartbeat {newer.request_id}"),
        ("whoami",),  # t2ibench submit's own checks, then its pull request
        ("create_commit", RESULTS, "dataset", results_path_files, None, True, pr_title),
        ("create_commit", REQUESTS, "dataset", (newer.path,), h3, False, f"Finished {newer.request_id}"),
    ]
    assert lines[:2] == [f"worker gpu-1: lost the claim on {older.request_id} to another worker",
                         f"worker gpu-1: claimed {newer.request_id}"]
    # The rival keeps its claim; ours is FINISHED and points at the pull request.
    assert hub.record(older.path, h4)["worker_id"] == "rival"
    done = hub.record(newer.path, h4)
    [(repo, files, _, _)] = hub.prs
    [(results_path, data)] = files.items()
    assert (done["status"], done["worker_id"], done["results_path"], done["results_url"]) == \
        (FINISHED, "gpu-1", results_path, f"https://huggingface.co/datasets/{RESULTS}/discussions/1")
    assert results_path.startswith(f"results/{model_folder_name('builtin:tiny-sd')}/") and pr_title.startswith("[demo] Add results:")
    posted = json.loads(data)
    assert posted["evaluated_by"] == "maintainers' worker gpu-1" and posted["request_id"] == newer.request_id
    assert posted["submission"]["results_repo"] == RESULTS
    assert check_results(posted, allow_demo=True) == []
    assert results_path == f"results/{model_folder_name('builtin:tiny-sd')}/request-builtin-v1.json"

    # Killed after its pull request, before FINISHED: the next worker finds the pull request and
    # finishes the request with it, without auditing or posting again.
    running = RequestRecord(**{k: v for k, v in done.items() if k not in ("format", "request_id")}).replace(
        status=RUNNING, finished_at=None, results_path=None, results_url=None, attempts=1,
        heartbeat_at="2026-11-24T09:00:00.000Z", heartbeat_timeout_s=1.0)
    hub.apply({newer.path: running.dumps()})
    lines.clear()

    def must_not_run(record, opts):
        raise AssertionError("audited twice")

    again = work_once(HubRequestStore(REQUESTS), WorkerOptions(worker_id="gpu-2", runs_dir=tmp_path / "runs2",
                      results_repo=RESULTS, heartbeat_timeout=1, log=lines.append), audit=must_not_run)
    assert again.status == "finished" and len(hub.prs) == 1
    assert (again.record.results_path, again.record.results_url, again.record.worker_id) == \
        (results_path, f"https://huggingface.co/datasets/{RESULTS}/discussions/1", "gpu-2")
    assert any("an earlier attempt posted its results" in line for line in lines), lines


def test_claim_refused_by_an_unrelated_commit_is_tried_again(hub, tmp_path):
    oldest = _hub_model()
    _seed(hub, oldest)
    newcomer = _hub_model("acme/newcomer", submitted_at="2026-11-24T10:00:00.000Z")
    hub.before_commit = lambda: hub.apply({newcomer.path: newcomer.dumps()})  # a new request lands meanwhile
    opts = WorkerOptions(worker_id="gpu-1", runs_dir=tmp_path, results_repo=RESULTS, log=lambda line: None)
    claimed = claim_next(HubRequestStore(REQUESTS), opts)
    assert claimed.record.model_id == "acme/painter"  # still the oldest, not the newcomer
    claims = [(c[3], c[4]) for c in hub.calls if c[0] == "create_commit"]
    assert claims == [((oldest.path,), hub.history[0][0]), ((oldest.path,), hub.history[1][0])]
    assert hub.record(oldest.path)["status"] == RUNNING and hub.record(newcomer.path)["status"] == PENDING


def test_heartbeat_after_an_unrelated_commit_retries_on_the_new_head(hub):
    now = utc_iso_ms()
    mine = _demo(status=RUNNING, worker_id="gpu-1", started_at=now, heartbeat_at=now)
    _seed(hub, mine)
    store = HubRequestStore(REQUESTS)
    stored = store.read(mine.path)
    hub.before_commit = lambda: hub.apply({_hub_model().path: _hub_model().dumps()})  # a new request arrives
    hub.calls.clear()
    h0 = stored.version
    beat = update_request(store, stored, lambda r: r.replace(heartbeat_at=utc_iso_ms()), message="Heartbeat",
                          still_ours=owned_by(mine))
    h1 = hub.history[1][0]
    assert hub.calls == [
        ("create_commit", REQUESTS, "dataset", (mine.path,), h0, False, "Heartbeat"),  # 412
        ("repo_info", REQUESTS, "dataset"), ("hf_hub_download", REQUESTS, mine.path, "dataset", h1),
        ("create_commit", REQUESTS, "dataset", (mine.path,), h1, False, "Heartbeat"),
    ]
    assert beat.version == hub.head and hub.slept == []


def test_late_head_after_a_refusal_waits_and_reads_again(hub):
    now = utc_iso_ms()
    mine = _demo(status=RUNNING, worker_id="gpu-1", started_at=now, heartbeat_at=now)
    _seed(hub, mine)
    store = HubRequestStore(REQUESTS)
    stored = store.read(mine.path)
    hub.before_commit = lambda: hub.apply({_hub_model().path: _hub_model().dumps()})
    hub.lag_after_refusal = 1  # the first read after the 412 still shows the old head
    update_request(store, stored, lambda r: r.replace(heartbeat_at=utc_iso_ms()), message="Heartbeat",
                   still_ours=owned_by(mine))
    parents = [c[4] for c in hub.calls if c[0] == "create_commit"]
    assert parents == [hub.history[0][0], hub.history[1][0]] and hub.slept == [0.5]


def test_stale_request_is_requeued_with_a_commit(hub, tmp_path):
    hour_ago = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    mine = _demo(status=RUNNING, worker_id="gone", started_at=hour_ago, heartbeat_at=hour_ago, heartbeat_timeout_s=60.0)
    _seed(hub, mine)
    opts = WorkerOptions(worker_id="gpu-2", runs_dir=tmp_path, results_repo=RESULTS, heartbeat_timeout=60,
                         log=lambda line: None)
    assert requeue_stale(HubRequestStore(REQUESTS), opts) == [mine.request_id]
    commit = [c for c in hub.calls if c[0] == "create_commit"]
    assert commit == [("create_commit", REQUESTS, "dataset", (mine.path,), hub.history[0][0], False,
                       f"Re-queue {mine.request_id} (worker gone stopped)")]
    rec = hub.record(mine.path)
    assert (rec["status"], rec["attempts"], rec["worker_id"], rec["heartbeat_at"]) == (PENDING, 1, None, None)


def test_worker_needs_the_hub_before_claiming(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert main(["worker", "--requests", REQUESTS, "--results", RESULTS, "--once"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"t2ibench: error: cannot post results to {RESULTS}: no Hugging Face token (run `hf auth login` or set "
        "HF_TOKEN)"]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["worker", "--requests", REQUESTS, "--results-folder", str(tmp_path / "r"), "--once"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"t2ibench: error: cannot write requests to {REQUESTS}: HF_HUB_OFFLINE is set"]
