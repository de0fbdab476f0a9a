"""The image-API path against a misbehaving server (issue 33): a preflight that checks the
endpoint before the plan and writes nothing, answers read by the bounded reader within a
deadline, oversized / transparent / tiny images refused per probe, Retry-After capped, no
credentials in --api-base, --api-rpm refused at parse time. Every server is
tests/openai_images_server.py on 127.0.0.1."""

import base64
import socket
import time

import pytest

from benchmark.cli import main
from benchmark.models.api_images import ApiError, check_api_endpoint
from benchmark.models.text_to_image import load_text_to_image
from api_fixtures import KEY, api_model, key, probe_rows as _rows, server  # noqa: F401 (fixtures used by name)


def _model(server, key, max_retries=2, **options):
    return api_model(server, key, max_retries=max_retries, **options)


def _leaks(text: str) -> list[str]:
    """The forms of KEY a server may echo, found in ``text``."""
    forms = {"plain": KEY, "reversed": KEY[::-1],
             "base64": base64.b64encode(f"Incorrect API key provided: {KEY}".encode()).decode()}
    return [name for name, form in forms.items() if form in text or form[8:40] in text]


def _run(base, key_env, out, *extra):
    return main(["run", "--model", "openai:dall-e-2", "--set", "size=256x256", "--api-base", base, "--api-key-env",
                 key_env, "--suites", "gep_neutral", "--limit", "2", "--encoder", "builtin:tiny-clip", "--quiet",
                 "--out", str(out), *extra])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ 1. preflight before the plan


@pytest.mark.parametrize("case", ["refused", "no-v1", "html-200", "html-404", "bad-key", "unknown-model"])
def test_preflight_fails_in_one_line_before_the_plan_and_writes_nothing(server, key, tmp_path, capsys, case):
    base = server.api_base
    if case == "refused":
        base = f"http://127.0.0.1:{_closed_port()}/v1"
    elif case == "no-v1":
        base = base.removesuffix("/v1")
    elif case == "html-200":
        server.models_action = "html"
    elif case == "html-404":
        server.models_action = "404-html"
    elif case == "bad-key":
        server.models_action = "401-b64"
    elif case == "unknown-model":
        server.models = ["gpt-4o", "whisper-1"]
    options = {"api_base": base, "api_key_env": key, "size": "256x256"}
    t0 = time.monotonic()
    with pytest.raises(ApiError):
        check_api_endpoint("dall-e-2", options)  # the preflight's own check: one request, no retry
    assert time.monotonic() - t0 < 10
    server.requests.clear()
    out = tmp_path / "run"
    t0 = time.monotonic()
    assert _run(base, key, out) == 2
    assert time.monotonic() - t0 < 30  # the whole command, imports included (under 5 s on an idle machine)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1, err
    assert "plan:" not in captured.err + captured.out and not out.exists()
    assert not _leaks(err)
    assert all(r["method"] == "GET" for r in server.requests), "no image is requested"
    assert len(server.requests) <= 1
    expected = {"refused": "cannot be reached", "no-v1": "HTTP 404", "html-200": "not JSON", "html-404": "HTTP 404",
                "bad-key": "refused the key", "unknown-model": "does not list the model dall-e-2"}[case]
    assert expected in err, err


def test_preflight_passes_a_server_that_lists_the_model(server, key):
    check_api_endpoint("dall-e-2", {"api_base": server.api_base, "api_key_env": key})
    assert [(r["method"], r["path"], r["authorization"]) for r in server.requests] == [
        ("GET", "/v1/models", f"Bearer {KEY}")]


def test_a_run_that_fails_before_its_first_image_leaves_no_run_folder(server, key, tmp_path, capsys):
    server.default_action = "404-html"  # the endpoint lists models, then every image request 404s
    out = tmp_path / "run"
    assert _run(server.api_base, key, out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "HTTP 404" in err[-1] and not out.exists()
    posts = [r for r in server.requests if r["method"] == "POST"]
    assert 1 <= len(posts) <= 2, "a 404 is not retried"  # the two probes of the first batch, once each


def test_4xx_other_than_408_409_429_is_never_retried(server, key):
    server.script["A cat."] = ["404-html"]
    with pytest.raises(ApiError, match="HTTP 404"):
        _model(server, key).generate_probes(_rows("A cat."))
    assert len(server.requests) == 1


# ------------------------------------------------------------------ 2. bounded answers


def test_deeply_nested_json_is_refused_in_one_line(server, key):
    server.script["A deep answer."] = ["deep"]
    with pytest.raises(ApiError) as err:
        _model(server, key).generate_probes(_rows("A deep answer."))
    assert "nested" in str(err.value) and "\n" not in str(err.value) and len(server.requests) == 1


@pytest.mark.parametrize("action, words, reason", [("bomb", "30000x30000", "too large"),
                                                   ("big", "512x512 image for a 256x256", "too large"),
                                                   ("rgba", "transparency", "transparent"), ("tiny", "1x1 pixels", "tiny")])
def test_unscorable_images_are_withheld_under_their_own_reason(server, key, action, words, reason):
    """Issue 41: they were counted as "refused by the image API (content policy)"."""
    server.script["A bad image."] = [action]
    t0 = time.monotonic()
    out = _model(server, key).generate_probes(_rows("A fine image.", "A bad image."))
    assert time.monotonic() - t0 < 10
    assert out.nsfw == [None, True] and len(server.requests) == 2  # withheld, not retried
    assert out.withheld[0]["probe_id"] == "p/01" and out.withheld[0]["reason"] == reason
    assert words in out.withheld[0]["message"] and "not scored" in out.withheld[0]["message"]
    assert out.images[1].size == (256, 256) and out.images[1].getextrema() == ((0, 0), (0, 0), (0, 0))


def test_api_images_and_supplied_images_pass_one_rule(server, key, monkeypatch):
    import benchmark.contract.image_provenance as provenance
    from benchmark.runner import supplied_images

    assert supplied_images.load_scorable_image is provenance.load_scorable_image
    labels, real = [], provenance.load_scorable_image
    monkeypatch.setattr(provenance, "load_scorable_image",
                        lambda data, label=None: labels.append(label) or real(data, label))
    assert _model(server, key).generate_probes(_rows("A fine image.")).nsfw == [None]
    assert labels == ["the API's image"]


# ------------------------------------------------------------------ 3. Retry-After cap, total deadline


def test_a_huge_retry_after_is_capped_and_said_once(server, key, capsys):
    server.script["A patient cat."] = ["429-huge", "429-huge"]
    t0 = time.monotonic()
    out = _model(server, key, retry_after_cap=0.2).generate_probes(_rows("A patient cat."))
    assert out.nsfw == [None] and time.monotonic() - t0 < 5 and len(server.requests) == 3
    lines = [line for line in capsys.readouterr().err.splitlines() if "asked to wait" in line]
    assert len(lines) == 1 and "86,400 s" in lines[0] and "0.2 s at most" in lines[0]


@pytest.mark.parametrize("action", ["trickle", "trickle-head"])
def test_a_trickling_server_meets_the_total_deadline(server, key, action):
    server.script["A slow answer."] = [action] * 5
    server.trickle_seconds = 0.2  # far under the per-read timeout: only a total deadline ends it
    t0 = time.monotonic()
    with pytest.raises(ApiError) as err:
        _model(server, key, deadline=1.0, max_retries=1).generate_probes(_rows("A slow answer."))
    assert time.monotonic() - t0 < 6
    assert "1 s deadline" in str(err.value) and "gave up after 2 attempts" in str(err.value)


def test_one_probe_stops_at_its_total_deadline_across_attempts(server, key):
    """Issue 41: a server trickling its headers held one probe for 300 s x 7 attempts (35 minutes)."""
    server.script["A slow answer."] = ["trickle-head"] * 20
    server.trickle_seconds = 0.2
    t0 = time.monotonic()
    with pytest.raises(ApiError) as err:
        _model(server, key, deadline=1.0, max_retries=10, probe_deadline=2.5).generate_probes(_rows("A slow answer."))
    assert time.monotonic() - t0 < 5
    message = str(err.value)
    assert "no image within the 2.5 s total deadline of one probe" in message and "\n" not in message, message
    assert "rerun the same command to resume" in message


@pytest.mark.parametrize("concurrency", [1, 2, 4])
def test_a_batch_stops_at_one_probe_deadline_whatever_the_concurrency(server, key, capsys, concurrency):
    """Issue 51: the other requests of a batch ran on after a probe passed its deadline (5.0 s for a
    2.5 s deadline, --api-concurrency 1, a batch of 4): the batch now stops with the first failure,
    the requests in flight cut, the queued ones never sent; and lines said while it waits."""
    server.script["A slow answer."] = ["trickle-head"] * 40
    server.trickle_seconds = 0.2
    model = _model(server, key, deadline=1.0, max_retries=10, probe_deadline=2.5, concurrency=concurrency)
    t0 = time.monotonic()
    with pytest.raises(ApiError) as err:
        model.generate_probes(_rows(*["A slow answer."] * 4))
    assert time.monotonic() - t0 < 2.5 + 1.0, time.monotonic() - t0
    assert "no image within the 2.5 s total deadline of one probe" in str(err.value)
    waiting = [line for line in capsys.readouterr().err.splitlines() if "still waiting for" in line]
    assert waiting and all(f"image(s) of this batch after " in line and "of its 2.5 s deadline" in line
                           for line in waiting), waiting
    assert len(waiting) <= 12  # a line every tenth of the deadline, not a flood
    time.sleep(0.3)
    assert not model._cuts  # no exchange left running


def test_a_slow_answer_is_waited_for_with_lines_and_kept(server, key, capsys):
    server.script["A slow answer."] = ["timeout"]
    server.slow_seconds = 1.2
    out = _model(server, key, deadline=5.0, probe_deadline=5.0).generate_probes(_rows("A slow answer.", "Fast."))
    assert len(out.images) == 2 and out.withheld == []
    lines = [line for line in capsys.readouterr().err.splitlines() if "still waiting for" in line]
    assert 1 <= len(lines) <= 3, lines  # every 0.5 s (a tenth of the 5 s deadline), for 1.2 s
    assert "still waiting for 1 of 2 image(s) of this batch after " in lines[-1]
    assert "probe p/00: attempt 1 of at most 3, " in lines[-1] and "s left of its 5 s deadline" in lines[-1]


# ------------------------------------------------------------------ 5. credentials


@pytest.mark.parametrize("base", ["http://user:{key}@127.0.0.1:{port}/v1", "http://127.0.0.1:{port}/v1?api_key={key}",
                                  "http://{key}@127.0.0.1:{port}/v1", "ftp://u:{key}@127.0.0.1/v1",
                                  "http://127.0.0.1:{port}/{key}/v1", "http://127.0.0.1:{port}/v1/{key}",
                                  "http://127.0.0.1:{port}/v1/{quoted}", "http://127.0.0.1:{port}/v1#{key}",
                                  "http://127.0.0.1:{port}/sk-proj-AAAAbbbbCCCC1234/v1",
                                  "http://127.0.0.1:{port}/{token}/v1"])
def test_credentials_in_the_api_base_are_refused_without_echo(server, key, tmp_path, capsys, base):
    out = tmp_path / "run"
    quoted = "".join(f"%{b:02X}" for b in KEY.encode())
    token = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1u"  # 48 characters of base64
    assert _run(base.format(key=KEY, port=server.server_address[1], quoted=quoted, token=token), key, out) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--api-base" in err and KEY not in err and "DO-NOT-LEAK" not in err
    assert "AAAAbbbbCCCC" not in err and token not in err and quoted not in err
    assert not out.exists() and server.requests == []


@pytest.mark.parametrize("segment, key_like", [
    ("v1", False), ("openai", False), ("dall-e-3", False), ("deployments", False),
    ("123e4567-e89b-12d3-a456-426614174000", False),  # a UUID (36 characters)
    ("0123456789abcdef0123456789abcdef", False),        # a 32-hex account ID (Cloudflare's AI gateway path)
    ("sk-proj-AAAAbbbbCCCC1234", True), ("hf_abcdefghijklmnop", True), ("AIzaSyAbCdEfGh12", True),
    ("Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1u", True),  # 48 base64 characters
    (KEY, True), (f"prefix-{KEY}", True), ("%73k-proj-AAAAbbbbCCCC1234", True),  # percent-encoded "s"
])
def test_what_a_key_like_path_segment_is(segment, key_like):
    from benchmark.models.api_images import key_like as is_key_like

    assert is_key_like(segment, KEY) is key_like


@pytest.mark.parametrize("status", ["405", "501"])
def test_an_api_without_a_model_list_is_audited(server, key, tmp_path, capsys, status):
    """Issue 41: a server serving only POST /images/generations was refused ("GET /models answered HTTP 501")."""
    server.models_action = status
    out = tmp_path / "run"
    assert _run(server.api_base, key, out, "--n-resamples", "20") == 0
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "no model list" in line]
    assert len(said) == 1 and f"HTTP {status}" in said[0] and "not checked" in said[0], err
    assert (out / "results.json").is_file()
    assert sum(r["method"] == "POST" for r in server.requests) == 2


def test_an_unreachable_api_is_refused_before_any_heavy_import(tmp_path):
    """Issue 41: `run` imported diffusers and torch (and, with --quiet, 5 s of diffusers) before its
    preflight: an unreachable --api-base took 7-11 s to refuse."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "T2IBENCH_TEST_KEY": KEY}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "benchmark.cli", "run", "--model",
                           "openai:dall-e-2", "--api-base", f"http://127.0.0.1:{_closed_port()}/v1", "--api-key-env",
                           "T2IBENCH_TEST_KEY", "--quiet", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, env=env, timeout=120)
    seconds = time.monotonic() - t0
    imported = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 2 and len(errors) == 1 and "cannot be reached" in errors[0], proc.stderr[-2000:]
    assert not imported & {"torch", "diffusers", "transformers", "open_clip", "pandas", "sklearn", "datasets"}
    assert seconds < 30  # about 1 s on a quiet machine (the imports above took 7-11 s)


@pytest.mark.parametrize("action", ["401", "401-b64", "401-rev"])
def test_a_401_echoing_the_key_in_any_form_is_scrubbed(server, key, action):
    server.script["A tree."] = [action]
    with pytest.raises(ApiError) as err:
        _model(server, key).generate_probes(_rows("A tree."))
    assert "HTTP 401" in str(err.value) and not _leaks(str(err.value)), str(err.value)


# ------------------------------------------------------------------ 6. --api-rpm


@pytest.mark.parametrize("rpm", ["1e-9", "nan", "inf", "-5", "0", "abc"])
def test_api_rpm_refused_when_parsed(key, tmp_path, capsys, rpm):
    with pytest.raises(SystemExit) as exit_:
        _run("http://127.0.0.1:9/v1", key, tmp_path / "run", "--api-rpm", rpm)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--api-rpm" in err and "Traceback" not in err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("rpm", [1e-9, float("nan"), float("inf"), -1])
def test_api_rpm_refused_through_the_python_api(key, rpm):
    with pytest.raises(ValueError, match="rpm"):
        load_text_to_image("openai:dall-e-2", api_key_env=key, rpm=rpm)


@pytest.mark.parametrize("case", ["refused", "html-200"])
def test_generate_checks_the_endpoint_too(server, key, tmp_path, capsys, case):
    """`t2ibench generate` (no preflight of its own) checks the endpoint before any work, as `run` does."""
    base = f"http://127.0.0.1:{_closed_port()}/v1" if case == "refused" else server.api_base
    if case == "html-200":
        server.models_action = "html"
    out = tmp_path / "run"
    t0 = time.monotonic()
    rc = main(["generate", "--model", "openai:dall-e-2", "--set", "size=256x256", "--api-base", base,
               "--api-key-env", key, "--suites", "gep_neutral", "--limit", "2", "--quiet", "--out", str(out)])
    assert rc == 2 and time.monotonic() - t0 < 30
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert not out.exists() and all(r["method"] == "GET" for r in server.requests)
