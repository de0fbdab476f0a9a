"""Every model-loading error is one clear line, raised before any heavy work.

Network cases run in subprocesses because huggingface_hub reads HF_ENDPOINT /
HF_HUB_OFFLINE / HF_HOME at import time: an offline cache, an unreachable endpoint,
and a local HTTP server that answers like the Hub does for gated / missing repos.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from benchmark.models import (
    DeviceUnavailableError,
    MalformedSpecError,
    ModelSpecError,
    UnknownBuiltinError,
)
from benchmark.models.encoders import load_encoder
from benchmark.models.text_to_image import load_text_to_image
from benchmark.models.vqa import load_vqa

ROOT = Path(__file__).resolve().parents[1]


def one_line(err: Exception) -> str:
    msg = str(err)
    assert "\n" not in msg and msg.strip() == msg and msg
    return msg


@pytest.mark.parametrize(
    "loader, spec, known",
    [
        (load_text_to_image, "builtin:tiny-gan", "builtin:tiny-sd"),
        (load_text_to_image, "builtin:tiny-clip", "builtin:tiny-sd"),  # exists, but not a text-to-image model
        (load_encoder, "builtin:tiny-sd", "builtin:tiny-clip"),
        (load_vqa, "builtin:nope", "builtin:tiny-vqa"),
    ],
)
def test_unknown_builtin(loader, spec, known, cache):
    with pytest.raises(UnknownBuiltinError) as info:
        loader(spec)
    msg = one_line(info.value)
    assert spec in msg and known in msg
    assert not (cache / "builtin" / spec.split(":")[1]).exists() or spec.endswith(("tiny-clip", "tiny-sd"))


@pytest.mark.parametrize(
    "loader, spec, fragment",
    [
        (load_text_to_image, "", "empty"),
        (load_text_to_image, "sd:runwayml/x", "unknown scheme"),
        (load_text_to_image, "./no/such/folder", "does not exist"),
        (load_text_to_image, "not a valid/repo id!!", "neither a Hub model ID"),
        (load_text_to_image, "python:no_such_module_xyz:generate", "cannot import"),
        (load_text_to_image, "python:os.path:no_such_function", "has no attribute"),
        (load_text_to_image, "python:os.path", "python:module.path:function"),
        (load_encoder, "open_clip:ViT-B-32", "open_clip:ARCH:PRETRAINED"),
        (load_encoder, "open_clip:NoSuchArch:openai", "unknown open_clip architecture"),
        (load_encoder, "open_clip:ViT-B-32:no_such_tag", "unknown pretrained tag"),
        (load_encoder, "clip:ViT-B-32", "malformed encoder spec"),
        (load_encoder, "hf:", "hf:MODEL_ID"),
        (load_encoder, "open_clip:local-dir:/no/such/dir", "no open_clip_config.json"),
        (load_vqa, "blip2:Salesforce/x", "malformed VQA spec"),
        (load_vqa, "/no/such/vqa", "does not exist"),
    ],
)
def test_malformed_specs(loader, spec, fragment):
    with pytest.raises(MalformedSpecError) as info:
        loader(spec)
    assert fragment in one_line(info.value)


def test_local_folder_that_is_not_a_pipeline(tmp_path):
    with pytest.raises(MalformedSpecError, match="no model_index.json"):
        load_text_to_image(str(tmp_path))


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a GPU is present")
@pytest.mark.parametrize("loader, spec", [(load_text_to_image, "builtin:tiny-sd"),
                                          (load_encoder, "builtin:tiny-clip"),
                                          (load_vqa, "builtin:tiny-vqa")])
def test_gpu_asked_for_but_absent(loader, spec, tmp_path, monkeypatch):
    monkeypatch.setenv("T2IBENCH_CACHE", str(tmp_path))
    with pytest.raises(DeviceUnavailableError) as info:
        loader(spec, device="cuda")
    assert "no CUDA GPU is available" in one_line(info.value)
    assert not (tmp_path / "builtin").exists()  # raised before building or loading anything


def test_bad_device_and_dtype_names():
    with pytest.raises(MalformedSpecError, match="unknown device"):
        load_text_to_image("builtin:tiny-sd", device="tpu9")
    with pytest.raises(MalformedSpecError, match="unknown dtype"):
        load_text_to_image("builtin:tiny-sd", device="cpu", dtype="int3")


# -------------------------------------------------------------- network, in subprocesses

SCRIPT = r"""
import json, sys
from benchmark.models import ModelSpecError
from benchmark.models.text_to_image import load_text_to_image
from benchmark.models.encoders import load_encoder
from benchmark.models.vqa import load_vqa
loaders = {"t2i": load_text_to_image, "encoder": load_encoder, "vqa": load_vqa}
out = {}
for key, (loader, spec, *kwargs) in json.loads(sys.argv[1]).items():
    try:
        model = loaders[loader](spec, device="cpu", **(kwargs[0] if kwargs else {}))
        img = model.generate(["a photo of a doctor"], [0]).images[0]
        out[key] = {"ok": True, "size": list(img.size), "model_id": model.model_id,
                    "commit": model.settings.get("commit")}
    except ModelSpecError as err:
        out[key] = {"ok": False, "type": type(err).__name__, "msg": str(err)}
print("RESULT" + json.dumps(out))
"""


def run_script(env_extra: dict, cases: dict, tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update({"HF_HOME": str(tmp_path / "hf_home"), "PYTHONPATH": str(ROOT), **env_extra})
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(cases)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def test_offline_cached_model_loads_and_uncached_ones_fail_clearly(cache, tmp_path):
    """HF_HUB_OFFLINE=1: a model in the HF cache loads through the Hub-ID path; others fail in one line."""
    from benchmark.models.tiny import ensure_builtin

    # Put builtin:tiny-sd into a Hugging Face cache as if `hf download someorg/tiny-sd` had run.
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hf_home" / "hub" / "models--someorg--tiny-sd"
    shutil.copytree(ensure_builtin("tiny-sd"), repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)

    out = run_script({"HF_HUB_OFFLINE": "1"}, {
        "cached": ("t2i", "someorg/tiny-sd", {"num_inference_steps": 2}),
        "t2i": ("t2i", "nobody-xyz/not-cached"),
        "clip": ("encoder", "open_clip:ViT-B-32:openai"),
        "hfclip": ("encoder", "hf:nobody-xyz/clip-not-cached"),
        "vqa": ("vqa", "nobody-xyz/vqa-not-cached"),
    }, tmp_path)
    assert out["cached"] == {"ok": True, "size": [64, 64], "model_id": "someorg/tiny-sd", "commit": commit}
    for key, name in [("t2i", "nobody-xyz/not-cached"), ("clip", "timm/vit_base_patch32_clip_224.openai"),
                      ("hfclip", "nobody-xyz/clip-not-cached"), ("vqa", "nobody-xyz/vqa-not-cached")]:
        assert out[key]["type"] == "ModelNotAvailableError", out[key]
        assert f"{name} is not in the local Hugging Face cache and the Hub cannot be reached" in out[key]["msg"]
    # the default encoder offline says how to run anyway (issue 33: the README's first command, copied offline)
    assert "--encoder builtin:tiny-clip" in out["clip"]["msg"] and "\n" not in out["clip"]["msg"]


class FakeHub(BaseHTTPRequestHandler):
    """Answers as huggingface.co does: gated repos 401 + X-Error-Code: GatedRepo, missing ones
    404 + RepoNotFound; repos named *down* get their connection dropped."""

    def _answer(self):
        if "down" in self.path:
            self.close_connection = True
            self.connection.close()
            return
        if "gated" in self.path:
            self.send_response(401)
            self.send_header("X-Error-Code", "GatedRepo")
            self.send_header("X-Error-Message", "Access to model is restricted. You must have access to it.")
        else:
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("X-Error-Message", "Repository not found")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET = _answer

    def log_message(self, *args):
        pass


@pytest.fixture()
def fake_hub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)  # quick shutdown
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_gated_missing_and_unreachable_through_hf_endpoint(fake_hub, tmp_path):
    out = run_script({"HF_ENDPOINT": fake_hub, "T2IBENCH_HUB_TIMEOUT": "5"}, {
        "t2i_gated": ("t2i", "someorg/gated-model"),
        "vqa_gated": ("vqa", "someorg/gated-vqa"),
        "t2i_missing": ("t2i", "nobody-xyz/missing"),
        "hfclip_missing": ("encoder", "hf:nobody-xyz/missing-clip"),
        "t2i_down": ("t2i", "someorg/down-model"),
    }, tmp_path)
    assert out["t2i_gated"]["type"] == "GatedModelError"
    assert out["t2i_gated"]["msg"].startswith(
        "text-to-image model someorg/gated-model is gated: accept its licence on the Hub and log in (`hf auth login`)"
    )
    assert out["vqa_gated"]["type"] == "GatedModelError"
    for key in ("t2i_missing", "hfclip_missing"):
        assert out[key]["type"] == "ModelNotFoundError", out[key]
        assert "was not found on the Hub" in out[key]["msg"]
    assert out["t2i_down"]["type"] == "ModelNotAvailableError"
    assert "the Hub cannot be reached" in out["t2i_down"]["msg"]


def test_connection_refused_is_not_available(monkeypatch):
    from benchmark.models.errors import ModelNotAvailableError
    from benchmark.models.hub_access import ensure_hub_model

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(ModelNotAvailableError) as info:
        ensure_hub_model("nobody-xyz/never-cached-model", ["model_index.json"], what="text-to-image model",
                         endpoint="http://127.0.0.1:9", timeout=3)
    assert one_line(info.value).startswith(
        "text-to-image model nobody-xyz/never-cached-model is not in the local Hugging Face cache "
        "and the Hub cannot be reached"
    )


def test_errors_share_one_base_class():
    for cls in (MalformedSpecError, UnknownBuiltinError, DeviceUnavailableError):
        assert issubclass(cls, ModelSpecError) and issubclass(cls, ValueError)
    assert str(ModelSpecError("a\n  b")) == "a b"
