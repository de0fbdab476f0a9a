"""The queue carries `t2ibench run`'s model options: a single-file checkpoint on the Hub with its
``--base``, ``--quantize``, ``--lora-unet-only`` and ``--lora-trigger [TEXT]``. A request records
each one (another request, run folder and results file than the plain model's), checked while the
command line is parsed by run's own rules (the same one-line refusals as `t2ibench run`, before the
queue or the Hub is asked); the worker audits the request with them; the results, their provenance
and the board's row show them. The Hub is a patched ``HfApi.model_info`` and, for the audit, a Hugging
Face cache laid out around tiny random-weight pipelines (tests/tiny_single_file.py): meaningless scores.
"""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest
from cli_here import exit_status
from huggingface_hub import HfApi

from tiny_pipelines import build_family, install_in_hub_cache, use_hub_cache_offline
from tiny_single_file import write_original_sd_checkpoint

from benchmark.contract.digest import file_sha256
from submissions.request_store import LocalRequestStore
from submissions.requests import (
    FINISHED,
    InvalidRequest,
    RequestRecord,
    record_from_json,
)
from submissions.worker_options import WorkerOptions

SHA = "0123456789abcdef0123456789abcdef01234567"
LORA_SHA = "fedcba9876543210fedcba9876543210fedcba98"
FILE_SHA = "abcdefabcdefabcdefabcdefabcdefabcdefabcd"
NOW = "2026-11-24T09:30:00.000Z"
FILE = "hf://someone/finetune/finetune.safetensors"


def _record(**kw) -> RequestRecord:
    return RequestRecord(model_id=kw.pop("model_id", "acme/painter"), revision="main", commit=kw.pop("commit", SHA),
                         submitter="alice", submitted_at=NOW, **kw)


def _info(repo_id, **kw):
    files = kw.pop("files", ("model_index.json", "unet/config.json"))
    doc = {"id": repo_id, "sha": SHA, "private": False, "disabled": False, "pipeline_tag": "text-to-image",
           "siblings": [SimpleNamespace(rfilename=f) for f in files], "card_data": None}
    doc.update(kw)
    return SimpleNamespace(**doc)


HUB = {
    "acme/painter": _info("acme/painter"),
    "acme/style-lora": _info("acme/style-lora", sha=LORA_SHA, pipeline_tag=None,
                             files=("pytorch_lora_weights.safetensors", "README.md")),
    "someone/finetune": _info("someone/finetune", sha=FILE_SHA, files=("finetune.safetensors", "README.md"),
                              card_data={"base_model": "someone/tiny-sd15"}),
    "someone/bare": _info("someone/bare", sha=FILE_SHA, pipeline_tag=None, files=("model.safetensors",)),
    "someone/tiny-sd15": _info("someone/tiny-sd15"),
}


@pytest.fixture
def hub(monkeypatch):
    """``HfApi.model_info`` answering from :data:`HUB`; the calls it got."""
    calls = []

    def model_info(self, repo_id, revision=None, **kw):
        calls.append((repo_id, revision))
        return HUB[repo_id]

    monkeypatch.setattr(HfApi, "model_info", model_info)
    return calls


def _request(capsys, queue, *args) -> tuple[int, list[str], list[str]]:
    code = exit_status(["request", *args, "--to-folder", queue, "--submitter", "carol"])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def _stored(queue) -> list[RequestRecord]:
    return [s.record for s in LocalRequestStore(queue).snapshot().records]


# --------------------------------------------------------------------------- the record


def test_each_option_is_recorded_and_makes_another_request():
    plain = _record()
    assert set(plain.to_json()).isdisjoint({"file", "base", "quantization", "lora_unet_only", "lora_trigger"})
    assert plain.request_id == f"acme__painter@{SHA}"  # a request written before the options reads the same
    lora = [f"acme/style-lora@{LORA_SHA}:0.8"]
    variants = [
        _record(file="finetune.safetensors"),
        _record(file="finetune.safetensors", base="someone/tiny-sd15"),
        _record(quantization="torchao:int8wo"),
        _record(loras=lora),
        _record(loras=lora, lora_unet_only=True),
        _record(loras=lora, lora_trigger=True),
        _record(loras=lora, lora_trigger="sks person"),
    ]
    ids = {plain.request_id, *(v.request_id for v in variants)}
    assert len(ids) == len(variants) + 1  # each its own request, run folder and results file
    assert len({plain.path, *(v.path for v in variants)}) == len(ids)
    for rec in variants:
        assert record_from_json(json.loads(rec.dumps())) == rec
        assert rec.request_id.startswith(f"acme__painter@{SHA}+") and rec.path.endswith(f"{rec.variant}.json")
    assert variants[3].variant == _record(loras=lora).variant and "+opts-" not in variants[3].variant  # as before
    single = variants[1]
    assert single.audited_model_id == f"hf://acme/painter@{SHA}/finetune.safetensors"
    assert single.model_label == "hf://acme/painter/finetune.safetensors [base someone/tiny-sd15]"
    assert variants[6].model_label == "acme/painter + LoRA acme/style-lora:0.8 [trigger 'sks person']"


@pytest.mark.parametrize("changes, message", [
    ({"quantization": "torchao:int3"}, "--quantize 'torchao:int3' is not a quantization this loader applies"),
    ({"quantization": "bitsandbytes:4bit"}, "is not written as --quantize reads it (bnb:4bit)"),
    ({"quantization": "gguf"}, "GGUF weights are quantized files"),
    ({"lora_trigger": "sks"}, "--lora-trigger goes with --lora"),
    ({"lora_trigger": False}, "lora_trigger must be true or one line of text"),
    ({"loras": [f"acme/style-lora@{LORA_SHA}"], "lora_trigger": "sks\nperson"}, "lora_trigger must be true or one"),
    ({"loras": [f"acme/style-lora@{LORA_SHA}"], "lora_trigger": " sks"}, "without spaces around it"),
    ({"lora_unet_only": True}, "--lora-unet-only goes with --lora"),
    ({"lora_unet_only": "yes"}, "lora_unet_only must be true or false"),
    ({"base": "someone/tiny-sd15"}, "--base names the base of a single-file checkpoint (--model FILE.safetensors), "
                                    "not of acme/painter"),
    ({"file": "finetune.safetensors", "base": "./sd15"}, "base: './sd15' is not a Hub model id"),
    ({"file": "model.ckpt"}, "is not a Hub file hf://ORG/NAME[@REVISION]/PATH ending in .safetensors or .gguf"),
    ({"file": "../../etc/passwd.safetensors"}, "is not a Hub file"),
    ({"file": 3}, "file 3 must name a .safetensors or .gguf file of a Hub model"),
])
def test_a_record_whose_options_run_would_refuse_is_invalid(changes, message):
    doc = {**_record().to_json(), **changes, "request_id": None}
    with pytest.raises(InvalidRequest, match=None) as caught:
        record_from_json(doc)
    assert message in str(caught.value) and "\n" not in str(caught.value), str(caught.value)


def test_a_demo_request_takes_a_quantization_but_no_file():
    demo = RequestRecord(model_id="builtin:tiny-sd", revision="builtin-v1", commit="builtin-v1", submitter="a",
                         submitted_at=NOW, demo=True, quantization="torchao:int8wo")
    assert demo.request_id.startswith("builtin__tiny-sd@builtin-v1+opts-")
    choice = demo.model_choice()
    assert (choice.spec, choice.revision, choice.quantization) == ("builtin:tiny-sd", None, "torchao:int8wo")
    with pytest.raises(InvalidRequest, match="must name a .safetensors or .gguf file of a Hub model"):
        record_from_json({**demo.to_json(), "file": "x.safetensors", "request_id": None})


# --------------------------------------------------------------------------- t2ibench request


def test_request_pins_a_hub_single_file_and_checks_its_base(tmp_path, capsys, hub):
    q = tmp_path / "q"
    code, out, err = _request(capsys, q, FILE, "--base", "someone/tiny-sd15", "--set", "num_inference_steps=2")
    assert code == 0, err
    [rec] = _stored(q)
    assert (rec.model_id, rec.file, rec.commit, rec.base) == ("someone/finetune", "finetune.safetensors", FILE_SHA,
                                                              "someone/tiny-sd15")
    assert out == [f"queued {FILE} @ main (commit {FILE_SHA}) as PENDING: {q}/{rec.path}",
                   f"request id: {rec.request_id}"]
    assert rec.path.startswith(f"requests/someone--finetune/{FILE_SHA}+opts-")
    assert hub == [("someone/finetune", "main"), ("someone/tiny-sd15", "main")]
    # the same file at a revision written in its id, without --base: the card names the base
    hub.clear()
    code, _, err = _request(capsys, q, "hf://someone/finetune@v1/finetune.safetensors", "--dry-run")
    assert code == 0 and hub == [("someone/finetune", "v1")], err
    refusals = [
        (["hf://someone/finetune/other.safetensors"], "someone/finetune has no file other.safetensors"),
        (["hf://someone/bare/model.safetensors"], "neither its repo (no model_index.json) nor its model card (no "
                                                  "base_model) names the diffusers model it fine-tunes"),
        (["hf://someone/finetune@v1/finetune.safetensors", "--revision", "v2"], "names revision v1, --revision v2"),
        ([FILE, "--base", "someone/finetune"], "the base model someone/finetune has no model_index.json"),
    ]
    for args, message in refusals:
        code, _, err = _request(capsys, q, *args)
        assert code == 2 and len(err) == 1 and message in err[0], (args, err)


def test_request_carries_a_quantization_and_the_lora_options(tmp_path, capsys, hub):
    q = tmp_path / "q"
    assert _request(capsys, q, "builtin:tiny-sd", "--demo", "--quantize", "TorchAO:int8wo")[0] == 0
    assert _request(capsys, q, "acme/painter", "--lora", "acme/style-lora:0.8", "--lora-unet-only",
                    "--lora-trigger")[0] == 0
    code, out, err = _request(capsys, q, "acme/painter", "--lora", "acme/style-lora", "--lora-trigger", "sks person")
    assert code == 0, err
    stored = _stored(q)
    [demo] = [r for r in stored if r.demo]
    [unet_only] = [r for r in stored if r.lora_unet_only]
    [trigger] = [r for r in stored if isinstance(r.lora_trigger, str)]
    assert (demo.model_id, demo.quantization) == ("builtin:tiny-sd", "torchao:int8wo")  # as run writes it
    assert (unet_only.lora_unet_only, unet_only.lora_trigger) == (True, True)
    assert (trigger.lora_unet_only, trigger.lora_trigger) == (False, "sks person")
    assert unet_only.loras == [f"acme/style-lora@{LORA_SHA}:0.8"] and trigger.loras == [f"acme/style-lora@{LORA_SHA}"]
    assert out[-1] == f"request id: {trigger.request_id}"


RUN_AND_REQUEST_REFUSALS = [  # (request's arguments, run's arguments): one rule, one line
    (["builtin:tiny-sd", "--demo", "--quantize", "torchao:int3"], ["--model", "builtin:tiny-sd", "--quantize",
                                                                   "torchao:int3"]),
    (["builtin:tiny-sd", "--demo", "--quantize", "gguf"], ["--model", "builtin:tiny-sd", "--quantize", "gguf"]),
    (["builtin:tiny-sd", "--demo", "--lora-trigger"], ["--model", "builtin:tiny-sd", "--lora-trigger"]),
    (["acme/painter", "--lora-unet-only"], ["--model", "acme/painter", "--lora-unet-only"]),
    (["acme/painter", "--base", "someone/tiny-sd15"], ["--model", "acme/painter", "--base", "someone/tiny-sd15"]),
    (["acme/painter", "--lora", "acme/style-lora:nan"], ["--model", "acme/painter", "--lora", "acme/style-lora:nan"]),
]


def test_a_request_is_refused_as_run_refuses_its_options_before_the_hub_is_asked(tmp_path, capsys, hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # run's own checks of a Hub model never reach the network here
    q = tmp_path / "q"
    for request_args, run_args in RUN_AND_REQUEST_REFUSALS:
        code, _, err = _request(capsys, q, *request_args)
        run_code = exit_status(["run", *run_args, "--out", tmp_path / "run", "--quiet"])
        run_err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("t2ibench")]
        same = [ln.replace("t2ibench run", "t2ibench CMD") for ln in run_err]  # argparse names the command
        assert code == run_code == 2 and len(err) == 1, (request_args, err)
        assert [err[0].replace("t2ibench request", "t2ibench CMD")] == same, (request_args, err, run_err)
    local = tmp_path / "mine.safetensors"
    shutil.copy(__file__, local)
    (tmp_path / "sd15").mkdir()
    for args, message in [
        ([local], "a request names a model on the Hub (ORG/NAME, or a single file hf://ORG/NAME[@REV]/FILE); a "
                  "local file is for `t2ibench run --model`"),
        (["hf://someone/finetune/model.bin"], "is a pickle checkpoint, which can run code"),
        ([FILE, "--base", tmp_path / "sd15"], "a request names its base on the Hub (ORG/NAME); a local folder or "
                                              "built-in model is for `t2ibench run --base`"),
        ([FILE, "--base", "builtin:tiny-sd"], "a request names its base on the Hub"),
        (["acme/painter", "--lora", "acme/style-lora", "--lora-trigger", "a" * 201], "at most 200 characters"),
    ]:
        code, _, err = _request(capsys, q, *args)
        assert code == 2 and len(err) == 1 and message in err[0], (args, err)
    assert hub == [] and not q.exists()  # refused before the Hub or the queue was asked


# --------------------------------------------------------------------------- the worker


def test_the_worker_audits_the_request_with_its_options(tmp_path):
    from submissions.posted_results import results_relpath
    from submissions.worker_audit import audit_request_for, images_repo_for

    opts = WorkerOptions(worker_id="w1", runs_dir=tmp_path / "runs", results_folder=tmp_path / "r")
    rec = _record(model_id="someone/finetune", commit=FILE_SHA, file="finetune.safetensors", base="someone/tiny-sd15",
                  settings={"num_inference_steps": 2})
    model = audit_request_for(rec, opts).model
    assert (model.spec, model.revision, model.base) == (f"hf://someone/finetune@{FILE_SHA}/finetune.safetensors",
                                                        None, "someone/tiny-sd15")
    lora = _record(loras=[f"acme/style-lora@{LORA_SHA}"], lora_unet_only=True, lora_trigger="sks",
                   quantization=None)
    model = audit_request_for(lora, opts).model
    assert (model.spec, model.revision, model.adapters, model.lora_unet_only, model.lora_trigger) == (
        "acme/painter", SHA, (f"acme/style-lora@{LORA_SHA}",), True, "sks")
    quantized = _record(quantization="torchao:int8wo")
    assert audit_request_for(quantized, opts).model.quantization == "torchao:int8wo"
    assert audit_request_for(quantized, opts).run_dir.name == quantized.request_id != _record().request_id
    assert results_relpath(quantized) == f"acme--painter/request-{SHA}{quantized.variant}.json"
    assert results_relpath(_record()) == f"acme--painter/request-{SHA}.json"
    repo = images_repo_for(rec.replace(loras=[f"acme/style-lora@{LORA_SHA}"], lora_trigger=True), "org/imgs")
    assert repo.startswith("org/imgs-someone-finetune-abcdefab-lora-") and "-opts-" in repo and len(repo) <= 100


@pytest.fixture
def single_file_hub(tmp_path, monkeypatch):
    """someone/tiny-sd15 (a tiny SD 1.5 pipeline) and someone/finetune (one original-layout file of
    it with shifted UNet weights, whose card names that base) in an offline Hugging Face cache."""
    sd15 = build_family("sd15", tmp_path / "sd15")
    cache = tmp_path / "hub"
    install_in_hub_cache(sd15, cache, "someone/tiny-sd15", commit=SHA)
    finetune = tmp_path / "finetune"
    write_original_sd_checkpoint(sd15, finetune / "finetune.safetensors", shift=0.002)
    (finetune / "README.md").write_text("---\nbase_model: someone/tiny-sd15\n---\nA fine-tune.\n")
    install_in_hub_cache(finetune, cache, "someone/finetune", commit=FILE_SHA)
    use_hub_cache_offline(monkeypatch, cache)
    return finetune / "finetune.safetensors"


def test_a_single_file_request_is_audited_end_to_end_with_its_own_row(tmp_path, capsys, hub, single_file_hub,
                                                                     monkeypatch):
    """`t2ibench request hf://.../FILE --base ...` then a worker round with the real audit. The
    papers' annotators are not in the offline cache: the built-in tiny ones label the images, and
    since the results checks accept those for demos only, they are asked as for a demo (every other
    check is the real one)."""
    import submissions.submit
    import submissions.worker_audit
    from benchmark.runner.pipeline import run_audit
    from submissions.validate import check_results

    for module in (submissions.submit, submissions.worker_audit):
        monkeypatch.setattr(module, "check_results", lambda doc, allow_demo=False: check_results(doc, allow_demo=True))
    from submissions.leaderboard.board_model import Submission
    from submissions.leaderboard.wording import reference_label
    from submissions.provenance import PROVENANCE_WORKER, finished_requests, provenance
    from submissions.worker import work_once
    from submissions.worker_audit import audit_request_for

    q = tmp_path / "q"
    code, _, err = _request(capsys, q, FILE, "--base", "someone/tiny-sd15", "--set", "num_inference_steps=2",
                            "--set", "height=64", "--set", "width=64")
    assert code == 0, err

    def audit(record, opts):
        request = audit_request_for(record, opts)
        return run_audit(request.with_changes(annotators={"encoder": "builtin:tiny-clip", "vqa": "builtin:tiny-vqa"}))

    lines = []
    opts = WorkerOptions(worker_id="w1", runs_dir=tmp_path / "runs", results_folder=tmp_path / "r", suites=[
        "gep_neutral"], limit_per_suite=2, n_resamples=20, device="cpu", progress=False, log=lines.append)
    store = LocalRequestStore(q)
    outcome = work_once(store, opts, audit=audit)
    assert outcome.status == "finished", lines
    rec = outcome.record
    assert rec.status == FINISHED and rec.results_path.endswith(f"request-{FILE_SHA}{rec.variant}.json")
    doc = json.loads(open(rec.results_path).read())
    sha = file_sha256(single_file_hub)
    checkpoint = doc["model"]["checkpoint"]
    assert doc["model"]["id"] == rec.audited_model_id == f"hf://someone/finetune@{FILE_SHA}/finetune.safetensors"
    assert (checkpoint["sha256"], checkpoint["base"], checkpoint["base_from"]) == (sha, "someone/tiny-sd15", "--base")
    assert doc["request_id"] == rec.request_id and doc["evaluated_by"] == "maintainers' worker w1"
    # the results schema takes every request id the queue makes (a LoRA request's was refused before)
    lora_and_options = rec.replace(loras=[f"acme/style-lora@{LORA_SHA}"], lora_trigger=True).request_id
    assert "+lora-" in lora_and_options and check_results({**doc, "request_id": lora_and_options},
                                                          allow_demo=True) == []
    config = json.loads((opts.runs_dir / rec.request_id / "run_config.json").read_text())
    assert config["request"]["model"]["base"] == "someone/tiny-sd15"
    sub = Submission(doc, rec.results_path, rec.results_path, None)
    assert sub.key.startswith(f"file:{sha[:16]}#") and f"[file sha256 {sha[:12]}]" in reference_label(sub)
    assert provenance(sub, finished_requests(store)) == PROVENANCE_WORKER  # the file's id is the request's
