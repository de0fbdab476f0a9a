"""The runner's speed defaults (``--batch-size auto``, compile, static batches, CUDA layout):
on a CPU they change nothing; the automatic size is recorded and reused on resume; a padded
static batch drops its padding and a resumed run writes the same bytes."""

from __future__ import annotations

import json

import numpy as np
import pytest

import _gen_worker as worker
from audit_requests import audit_request, generate_into
from benchmark.runner import build_probes, read_manifest
from benchmark.runner.batch_size import AUTO, DEFAULT_BATCH_SIZE, BatchSize, parse_batch_size, resolve_batch_size

SUITES = ["gep_neutral"]


def _tiny(**kwargs):
    from benchmark.models import load_text_to_image

    return load_text_to_image("builtin:tiny-sd", device="cpu", **kwargs)


@pytest.mark.parametrize("value, expected", [("auto", AUTO), ("AUTO", AUTO), ("8", 8), (3, 3)])
def test_parse_batch_size(value, expected):
    assert parse_batch_size(value) == expected


@pytest.mark.parametrize("value", ["0", "-2", "x", "2.5", "", True])
def test_parse_batch_size_rejects(value):
    with pytest.raises(ValueError, match="expected a whole number >= 1 or 'auto'"):
        parse_batch_size(value)


def test_cli_rejects_bad_batch_size(capsys):
    from benchmark.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["generate", "--model", "builtin:tiny-sd", "--out", "unused", "--batch-size", "many"])
    assert exc.value.code == 2
    assert "expected a whole number >= 1 or 'auto', got 'many'" in capsys.readouterr().err


def test_cpu_defaults_change_nothing(tmp_path):
    """auto + compile's default on a CPU = the explicit pre-change settings (batch 4, no
    compile): same bytes, no speed setting recorded, batch 4 in run_config.json."""
    probes = build_probes(SUITES)
    default = generate_into(tmp_path / "default", _tiny(), probes, limit=2)
    legacy = generate_into(tmp_path / "legacy", _tiny(compile=False), probes, batch_size=4, limit=2)
    assert default.n_generated == legacy.n_generated == 2
    assert "compile" not in default.timings
    a, b = read_manifest(tmp_path / "default"), read_manifest(tmp_path / "legacy")
    assert list(a["sha256"]) == list(b["sha256"])
    assert list(a["settings"]) == list(b["settings"])
    settings = json.loads(a["settings"].iloc[0])
    assert settings["batch_invariant"] is True
    assert not {"compile", "static_batch", "channels_last", "fused_qkv"} & set(settings)
    cfg = json.loads((tmp_path / "default" / "run_config.json").read_text())
    assert cfg["batch_size"] == DEFAULT_BATCH_SIZE and cfg["batch_size_requested"] == AUTO
    assert "no memory probe" in cfg["batch_size_auto"]["rule"]


class _ProbedModel(worker.StandInModel):
    """The stand-in with a memory probe, a static batch and a warm-up, as CUDA diffusers has."""

    def __init__(self, probed: int):
        super().__init__()
        self.probed, self.prepared, self.calls = probed, [], []

    def auto_batch_size(self):
        return self.probed, {"rule": "test probe", "free_gib": 1.0}

    def prepare_batches(self, batch_size):
        self.prepared.append(batch_size)

    def warm_up(self):
        return True

    def generate(self, prompts, seeds):
        self.calls.append(len(prompts))
        return super().generate(prompts, seeds)


def test_auto_batch_size_is_recorded_and_reused_on_resume(tmp_path):
    probes = build_probes(SUITES)
    first = _ProbedModel(probed=3)
    with pytest.raises(RuntimeError, match="killed"):
        def dying(prompts, seeds, _real=first.generate):
            if len(first.calls) == 1:
                raise RuntimeError("killed")
            return _real(prompts, seeds)
        first.generate = dying
        generate_into(tmp_path, first, probes, limit=8)
    assert first.prepared == [3]
    cfg = json.loads((tmp_path / "run_config.json").read_text())
    assert cfg["batch_size"] == 3 and cfg["batch_size_requested"] == AUTO
    assert cfg["batch_size_auto"]["free_gib"] == 1.0
    # the resumed process probes another size (less free memory): the recorded one wins
    second = _ProbedModel(probed=2)
    summary = generate_into(tmp_path, second, probes, limit=8)
    assert second.prepared == [3] and second.calls == [3, 2]
    assert summary.n_done == 8 and summary.n_generated == 5
    assert "compile" in summary.timings  # the warm-up is timed apart ...
    assert summary.images_per_second > 0  # ... and not part of the time per image
    chosen = resolve_batch_size(AUTO, _ProbedModel(probed=9), tmp_path)
    assert chosen.size == 3 and chosen.auto["rule"].startswith("auto: the size this run folder was started with")
    assert resolve_batch_size(5, _ProbedModel(probed=9), tmp_path) == BatchSize(5)


def test_static_batch_pads_and_resume_writes_same_bytes(tmp_path):
    """The GPU path on a CPU: batched calls (not batch-invariant), every call padded to the
    static batch; a run killed after its first batch and resumed by a new model writes the
    bytes of an uninterrupted run."""
    probes = build_probes(SUITES)
    sizes = []

    def model():
        m = _tiny(batch_invariant=False)
        real = m.pipe.__call__

        def spy(*args, **kwargs):
            sizes.append(len(kwargs["prompt"]))
            return real(*args, **kwargs)
        m.pipe = type("Spy", (), {"__call__": staticmethod(spy), "scheduler": m.pipe.scheduler})()
        return m

    whole = generate_into(tmp_path / "whole", model(), probes, batch_size=2, limit=3)
    assert whole.n_generated == 3 and sizes == [2, 2]  # the last batch of 1 padded to 2
    cfg = json.loads((tmp_path / "whole" / "run_config.json").read_text())
    assert cfg["settings"]["static_batch"] == 2 and "batch_size_requested" not in cfg

    killed = model()
    real_generate = killed.generate

    def dying(prompts, seeds):
        if len(sizes) >= 3:
            raise RuntimeError("killed")
        return real_generate(prompts, seeds)
    killed.generate = dying
    with pytest.raises(RuntimeError, match="killed"):
        generate_into(tmp_path / "resumed", killed, probes, batch_size=2, limit=3)
    resumed = generate_into(tmp_path / "resumed", model(), probes, batch_size=2, limit=3)
    assert resumed.n_done_before == 2 and resumed.n_generated == 1
    assert list(read_manifest(tmp_path / "whole")["sha256"]) == list(read_manifest(tmp_path / "resumed")["sha256"])


def test_cuda_layout_keeps_images_close(tmp_path):
    """channels-last + fused QKV (the CUDA layout) change rounding only: on the CPU the tiny
    pipeline's images stay within a few grey levels of the plain pipeline's."""
    from benchmark.models.cuda_speed import apply_cuda_layout

    plain, fused = _tiny(), _tiny()
    done = apply_cuda_layout(fused.pipe)
    # the tiny UNet and VAE are convolutional (channels-last) and both fuse their QKV projections
    assert sorted(done["channels_last"]) == ["unet", "vae"] and sorted(done["fused_qkv"]) == ["unet", "vae"]
    a = np.asarray(plain.generate(["a photo of a doctor"], [7]).images[0], dtype=int)
    b = np.asarray(fused.generate(["a photo of a doctor"], [7]).images[0], dtype=int)
    assert a.shape == b.shape and np.abs(a - b).max() <= 2


def test_compile_mode_rules():
    import torch

    from benchmark.models.cuda_speed import DEFAULT_COMPILE_MODE, resolve_compile_mode

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_compile_mode(None, cpu) is None
    assert resolve_compile_mode(None, cuda) == DEFAULT_COMPILE_MODE == "default"
    assert resolve_compile_mode(False, cuda) is None
    assert resolve_compile_mode("reduce-overhead", cuda) == "reduce-overhead"
    with pytest.raises(ValueError, match="only used on CUDA"):
        resolve_compile_mode(True, cpu)
    with pytest.raises(ValueError, match="unknown torch.compile mode"):
        resolve_compile_mode("fastest", cuda)


class _FakeGPU:
    """torch.cuda's memory counters for a device of ``capacity`` bytes where a batch of b
    images needs ``fixed + per_image * b`` (``actual`` per image when the estimate is off)."""

    def __init__(self, capacity, fixed, per_image, actual=None):
        self.capacity, self.fixed, self.per_image = capacity, fixed, per_image
        self.actual = actual or per_image
        self.peak, self.batches = 0, []

    def run(self, batch):
        import torch

        self.batches.append(batch)
        per = self.per_image if batch <= 2 else self.actual
        need = self.fixed + per * batch
        if need > self.capacity:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (fake)")
        self.peak = need

    def install(self, monkeypatch):
        import torch

        for name in ("synchronize", "empty_cache", "reset_peak_memory_stats"):
            monkeypatch.setattr(torch.cuda, name, lambda *a, **k: None)
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a, **k: 0)
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a, **k: self.peak)
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a, **k: (self.capacity, 2 * self.capacity))


def test_probe_batch_size_arithmetic_and_oom_fallback(monkeypatch):
    from benchmark.models.cuda_speed import AUTO_MAX_BATCH, probe_batch_size

    gib = 2 ** 30
    gpu = _FakeGPU(capacity=20 * gib, fixed=2 * gib, per_image=gib)
    gpu.install(monkeypatch)
    batch, info = probe_batch_size(gpu.run, "cuda")
    # 80% of 20 GiB = 16 GiB, minus 2 fixed = 14 images, rounded down to a multiple of 4
    assert batch == 12 and gpu.batches == [1, 2, 12] and info["tried"] == [12]
    assert info["gib_per_image"] == 1.0 and info["fixed_gib"] == 2.0 and info["free_gib"] == 20.0
    # a batch that needs more than the estimate: halved until it fits
    gpu = _FakeGPU(capacity=20 * gib, fixed=2 * gib, per_image=gib, actual=3 * gib)
    gpu.install(monkeypatch)
    batch, info = probe_batch_size(gpu.run, "cuda")
    assert batch == 6 and info["tried"] == [12, 6]
    # plenty of memory: capped
    gpu = _FakeGPU(capacity=1000 * gib, fixed=gib, per_image=gib // 8)
    gpu.install(monkeypatch)
    assert probe_batch_size(gpu.run, "cuda")[0] == AUTO_MAX_BATCH


class _GraphReplay:
    """What a CUDA-graph replay does to a module's outputs, on the CPU: the eager forward, its
    result copied into one static buffer that every call returns (the next call overwrites it)."""

    def __init__(self, forward):
        self.forward, self.buffer = forward, None

    def __call__(self, *args, **kwargs):
        out = self.forward(*args, **kwargs)
        if self.buffer is None:
            self.buffer = out.clone()
        else:
            self.buffer.copy_(out)
        return self.buffer


def test_graph_safe_copies_outputs_out_of_the_replayed_memory(monkeypatch):
    """A scheduler keeping earlier outputs (PNDM) or a sliced VAE decode reads them after the
    next replay: without graph_safe they are all the last output, with it each keeps its value;
    each call starts a new CUDA-graph step."""
    import torch

    from benchmark.models.cuda_speed import graph_safe

    steps = []
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: steps.append(1))
    def forward(x):
        return x * 2

    raw, safe = _GraphReplay(forward), graph_safe(_GraphReplay(forward))
    kept_raw = [raw(torch.tensor([float(i)])) for i in range(3)]
    kept_safe = [safe(torch.tensor([float(i)])) for i in range(3)]
    assert [t.item() for t in kept_raw] == [4.0, 4.0, 4.0]
    assert [t.item() for t in kept_safe] == [0.0, 2.0, 4.0] and len(steps) == 3
    # outputs nested in tuples and diffusers' output classes are copied too
    from diffusers.models.autoencoders.vae import DecoderOutput

    out = graph_safe(lambda: (DecoderOutput(sample=raw(torch.tensor([5.0]))), 7))()
    assert out[0].sample.item() == 10.0 and out[0].sample is not raw.buffer and out[1] == 7


def test_sliced_vae_decode_under_replay_needs_graph_safe():
    """The tiny pipeline on the CPU, two images in one call, the VAE decoding one image at a time
    (slicing, the runner's CUDA default): a replayed decoder gives both images the second one's
    pixels; through graph_safe the images equal the eager pipeline's, bit for bit."""
    from benchmark.models.cuda_speed import graph_safe

    def images(model):
        model.pipe.vae.enable_slicing()
        out = model._call(["a photo of a doctor", "a photo of a nurse"], [1, 2])
        return [np.asarray(im) for im in out.images]

    eager = images(_tiny(batch_invariant=False))
    replayed = _tiny(batch_invariant=False)
    decoder = replayed.pipe.vae.decoder
    decoder._compiled_call_impl = _GraphReplay(decoder._call_impl)
    broken = images(replayed)
    assert (broken[0] == broken[1]).all() and not (eager[0] == eager[1]).all()
    decoder._compiled_call_impl = graph_safe(_GraphReplay(decoder._call_impl))
    fixed = images(replayed)
    assert all((a == b).all() for a, b in zip(fixed, eager))


@pytest.mark.parametrize("mode, graphs", [("default", False), ("reduce-overhead", True),
                                          ("max-autotune-no-cudagraphs", False)])
def test_compile_mode_is_a_setting_and_is_recorded(mode, graphs):
    """The CUDA set-up with a compile mode (the wrapper built around the tiny pipeline as on a GPU;
    torch.compile is lazy, nothing runs): the mode in settings and speed, the VAE decoder compiled
    when asked, CUDA-graph modes through graph_safe, and what run_config.json records."""
    import torch

    from benchmark.models.cuda_speed import uncompile_pipeline
    from benchmark.models.diffusers_model import DiffusersTextToImage, PipelineIdentity, SpeedChoice
    from benchmark.runner.run_config import make_run_config

    pipe = _tiny().pipe
    model = DiffusersTextToImage(pipe, PipelineIdentity("tiny", family="tiny"), device=torch.device("cuda"),
                                 dtype=torch.float32, speed=SpeedChoice(compile=mode, compile_vae=True))
    assert model.settings["compile"] == model.speed["compile"] == mode and not model.compiled
    model.prepare_batches(4)
    assert model.compiled and model.settings["static_batch"] == 4
    assert model.speed["compiled"] == ["unet", "vae.decoder"] and model.speed["cudagraphs"] is graphs
    for module in (pipe.unet, pipe.vae.decoder):
        assert hasattr(module._compiled_call_impl, "graph_safe_of") is graphs
    cfg = make_run_config(audit_request("run", "builtin:tiny-sd"), build_probes(SUITES).head(2), model=model)
    assert cfg["speed"]["compile"] == mode and cfg["speed"]["cudagraphs"] is graphs
    uncompile_pipeline(pipe)
    assert pipe.unet._compiled_call_impl is None and pipe.vae.decoder._compiled_call_impl is None
    with pytest.raises(ValueError, match="unknown torch.compile mode"):
        DiffusersTextToImage(pipe, PipelineIdentity("tiny", family="tiny"), device=torch.device("cuda"),
                             dtype=torch.float32, speed=SpeedChoice(compile="fastest"))
