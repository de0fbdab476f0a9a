"""The image-API backend (``--model openai:...``) against a local server speaking the OpenAI
Images API shape (tests/openai_images_server.py): no internet, no real key."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmark.cli import main
from benchmark.models.api_images import ApiError, OpenAIImagesModel, estimate_requests
from benchmark.models.text_to_image import load_text_to_image
from api_fixtures import KEY, api_model, key, probe_rows as _rows, server  # noqa: F401 (fixtures used by name)


def _model(server, key, max_retries=3, **options):
    return api_model(server, key, max_retries=max_retries, **options)


def test_success_speaks_the_images_api(server, key):
    model = _model(server, key)
    assert isinstance(model, OpenAIImagesModel)
    out = model.generate_probes(_rows("A woman riding a bike.", "A man riding a bike."))
    assert [im.size for im in out.images] == [(256, 256)] * 2 and all(im.mode == "RGB" for im in out.images)
    assert out.nsfw == [None, None] and out.withheld == []
    req = server.requests[0]
    assert req["path"] == "/v1/images/generations" and req["authorization"] == f"Bearer {KEY}"
    assert {k: req["body"][k] for k in ("model", "n", "size", "response_format")} == {
        "model": "dall-e-2", "n": 1, "size": "256x256", "response_format": "b64_json"}
    assert KEY not in json.dumps(model.settings) and KEY not in repr(model) and KEY not in json.dumps(model.provenance)
    assert model.provenance["kind"] == "api" and model.provenance["seeds_controlled"] is False


def test_gpt_image_1_sends_no_response_format(server, key):
    model = load_text_to_image("openai:gpt-image-1", api_base=server.api_base, api_key_env=key, quality="low")
    model.generate_probes(_rows("A photo of a lawyer."))
    body = server.requests[0]["body"]
    assert "response_format" not in body and body["quality"] == "low" and body["size"] == "1024x1024"


def test_429_waits_for_retry_after(server, key):
    server.script["A cat."] = ["429"]
    out = _model(server, key).generate_probes(_rows("A cat."))
    times = [r["time"] for r in server.requests]
    assert len(times) == 2 and times[1] - times[0] >= 0.95  # Retry-After: 1, not the 0.05 s back-off
    assert out.nsfw == [None]


def test_500_is_retried_then_given_up_with_one_line(server, key):
    server.script["A dog."] = ["500"]
    assert _model(server, key).generate_probes(_rows("A dog.")).nsfw == [None]
    assert len(server.requests) == 2
    server.script["A bird."] = ["500"] * 10
    with pytest.raises(ApiError) as err:
        _model(server, key, max_retries=2).generate_probes(_rows("A bird."))
    assert "gave up after 3 attempts" in str(err.value) and "HTTP 500" in str(err.value)
    assert "\n" not in str(err.value) and len(server.requests) == 5


def test_timeout_is_retried(server, key):
    server.slow_seconds = 3.0
    server.script["A slow horse."] = ["timeout"]
    out = _model(server, key, timeout=0.5).generate_probes(_rows("A slow horse."))
    assert out.nsfw == [None] and len(server.requests) == 2


def test_malformed_json_is_retried(server, key):
    server.script["A fish."] = ["malformed", "malformed"]
    out = _model(server, key).generate_probes(_rows("A fish."))
    assert out.images[0].size == (256, 256) and len(server.requests) == 3
    server.script["A frog."] = ["malformed"] * 10
    with pytest.raises(ApiError, match="not JSON|no decodable"):
        _model(server, key, max_retries=1).generate_probes(_rows("A frog."))


def test_content_policy_refusal_is_recorded_per_probe(server, key):
    server.script["A refused prompt."] = ["refuse"]
    out = _model(server, key).generate_probes(_rows("A fine prompt.", "A refused prompt."))
    assert out.nsfw == [None, True] and len(server.requests) == 2  # a refusal is an answer, not retried
    assert out.withheld == [{"probe_id": "p/01", "reason": "refused",
                             "message": "Your request was rejected as a result of our safety system."}]
    assert out.images[1].getextrema() == ((0, 0), (0, 0), (0, 0))  # the placeholder, as a safety checker's


def test_bad_key_is_one_line_without_the_key(server, key):
    server.script["A tree."] = ["401"]
    with pytest.raises(ApiError) as err:
        _model(server, key).generate_probes(_rows("A tree."))
    assert "HTTP 401" in str(err.value) and KEY not in str(err.value) and len(server.requests) == 1


def test_concurrency_and_rate_limit(server, key):
    server.delay = 0.3
    t0 = time.monotonic()
    _model(server, key, concurrency=4).generate_probes(_rows(*[f"Prompt {i}." for i in range(4)]))
    assert time.monotonic() - t0 < 1.0  # four 0.3 s answers in flight together
    server.delay = 0.0
    server.requests.clear()
    _model(server, key, rpm=120, concurrency=4).generate_probes(_rows(*[f"Other {i}." for i in range(3)]))
    starts = sorted(r["time"] for r in server.requests)
    assert starts[-1] - starts[0] >= 0.95  # 120/min: one start every 0.5 s


def test_estimate_and_checks(key):
    line = estimate_requests("dall-e-2", {"size": "512x512"}, 100)
    assert "100 request(s)" in line and "$1.80" in line
    assert "$4.00" in estimate_requests("dall-e-3", {}, 100)
    for options, match in (({"size": "7x7"}, "sizes"), ({"quality": "hd"}, "quality"),
                           ({"api_base": "ftp://x"}, "http"), ({"steps": 3}, "takes no setting")):
        with pytest.raises(ValueError, match=match):
            load_text_to_image("openai:dall-e-2", api_key_env=key, **options)
    with pytest.raises(ValueError, match="unknown OpenAI image model"):
        load_text_to_image("openai:dall-e-9", api_key_env=key)


def test_missing_key_refused_before_anything_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run"
    assert main(["run", "--model", "openai:dall-e-2", "--suites", "gep_neutral", "--limit", "2", "--out",
                 str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "OPENAI_API_KEY" in err and len(err.splitlines()) == 1 and not out.exists()


def _cli(args, env, **kw):
    return subprocess.Popen([sys.executable, "-m", "benchmark.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_kill_mid_run_then_resume_requests_only_the_rest(server, tmp_path, cache):
    """kill -9 in the middle of an API run; the rerun requests only probes not on disk, records the
    refusal, scores with it counted, and no file the run wrote holds the key."""
    server.delay = 0.4
    server.script["A man sitting at a table."] = ["refuse"]
    server.script["A woman sitting at a table."] = ["tiny"]  # withheld by the benchmark itself, not refused
    out = tmp_path / "run"
    env = {**os.environ, "T2IBENCH_TEST_KEY": KEY, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop("OPENAI_API_KEY", None)
    args = ["run", "--model", "openai:dall-e-2", "--set", "size=256x256", "--api-base", server.api_base,
            "--api-key-env", "T2IBENCH_TEST_KEY", "--api-concurrency", "2", "--api-rpm", "6000", "--suites",
            "gep_neutral", "--limit", "8", "--batch-size", "2", "--encoder", "builtin:tiny-clip", "--n-resamples",
            "20", "--quiet", "--out", str(out)]
    proc = _cli(args, env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((out / "images").glob("b*")):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    on_disk = {json.loads(line)["prompt"] for f in (out / "images").glob("b*/metadata.jsonl")
               for line in f.read_text().splitlines()}
    assert 0 < len(on_disk) < 8, "the kill should land mid-run"
    n_before = len(server.requests)
    server.delay = 0.0
    proc = _cli(args, env)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-2000:]
    second = [r["prompt"] for r in server.requests[n_before:] if r["method"] == "POST"]
    assert not on_disk & set(second) and len(set(second)) == 8 - len(on_disk)
    results = json.loads((out / "results.json").read_text())
    assert results["run"]["n_withheld"]["refused"] == 1 and results["run"]["n_nsfw_excluded"] == 0
    assert results["run"]["n_withheld"]["tiny"] == 1  # issue 41: counted apart from the API's refusals
    assert results["provenance"]["kind"] == "api" and results["model"]["spec"] == "openai:dall-e-2"
    assert any("1 images refused by the image API" in n for n in results["notes"]), results["notes"]
    assert any("1 images withheld by the benchmark (under 32 pixels a side)" in n for n in results["notes"])
    table = " ".join(stdout.split())  # the terminal table's line, wrapped at 80 columns
    assert "1 image refused by the image API (content policy)" in table
    assert "1 image withheld by the benchmark (under 32 pixels a side)" in table, stdout
    for path in [p for p in out.rglob("*") if p.is_file()]:
        assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in stdout + stderr
    from submissions.validate import check_results

    assert check_results(results, allow_demo=True) == []
