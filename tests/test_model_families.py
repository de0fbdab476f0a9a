"""Every diffusers text-to-image family the runner supports, as a tiny random-weight pipeline
(tests/tiny_pipelines.py): loaded through `run`'s loader from a folder and from a Hugging Face
cache under its Hub ID, generating at 2 steps; its settings from the model card table; the CUDA
set-up simulated on the CPU (``torch.compile`` replaced by a recorder) compiles the modules that
denoise and run_config.json records what happened; a FLUX audit end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tiny_pipelines import (
    ALSO_CACHED_AS, CALL_ARGUMENTS, FAMILIES, HUB_IDS, IMAGE_SIZES, build_family, install_in_hub_cache,
)

KEYS = sorted(FAMILIES)
#: the class each family runs as (a decoder folder runs as its combined pipeline)
PIPELINES = {
    "sd15": "StableDiffusionPipeline", "sd2": "StableDiffusionPipeline", "sdxl": "StableDiffusionXLPipeline",
    "playground": "StableDiffusionXLPipeline", "lcm": "LatentConsistencyModelPipeline",
    "kandinsky22": "KandinskyV22CombinedPipeline", "kandinsky22_decoder": "KandinskyV22CombinedPipeline",
    "unclip": "UnCLIPPipeline", "wuerstchen": "WuerstchenCombinedPipeline",
    "stable_cascade": "StableCascadeCombinedPipeline", "sd3": "StableDiffusion3Pipeline",
    "sd35": "StableDiffusion3Pipeline", "flux_schnell": "FluxPipeline", "flux_dev": "FluxPipeline",
    "pixart_alpha": "PixArtAlphaPipeline", "pixart_sigma": "PixArtSigmaPipeline", "sana": "SanaPipeline",
    "kandinsky3": "Kandinsky3Pipeline", "lumina2": "Lumina2Pipeline", "qwen_image": "QwenImagePipeline",
    "z_image": "ZImagePipeline", "hidream": "HiDreamImagePipeline", "cogview3plus": "CogView3PlusPipeline",
    "cogview4": "CogView4Pipeline", "auraflow": "AuraFlowPipeline", "sana_sprint": "SanaSprintPipeline",
    "kolors": "KolorsPipeline",
}
#: whether classifier-free guidance runs at each cached model's card settings (the record says so
#: and the first call's denoiser rows agree): Qwen-Image's true CFG is on only because its card
#: passes a negative prompt; distilled models and SANA-Sprint's embedded guidance run without
CARD_GUIDANCE = {
    "Qwen/Qwen-Image": True, "Tongyi-MAI/Z-Image-Turbo": False, "HiDream-ai/HiDream-I1-Full": True,
    "HiDream-ai/HiDream-I1-Dev": False, "HiDream-ai/HiDream-I1-Fast": False, "THUDM/CogView3-Plus-3B": True,
    "THUDM/CogView4-6B": True, "fal/AuraFlow-v0.3": True,
    "Efficient-Large-Model/Sana_Sprint_1.6B_1024px_diffusers": False, "Kwai-Kolors/Kolors-diffusers": True,
    "black-forest-labs/FLUX.1-schnell": False, "black-forest-labs/FLUX.1-dev": False,
    "stabilityai/sdxl-turbo": False, "stabilityai/stable-diffusion-3.5-medium": True,
}
PROMPTS, SEEDS = ["a photo of a doctor", "a photo of a nurse"], [1, 2]
#: families whose guidance record the first call cannot check: the pipeline keeps no ``num_timesteps``
#: (PixArt's; Kandinsky 2.2's combined pipeline), so guidance.py's GuidanceCheck counts no step and
#: lets the record stand unchecked (a gap in guidance.py, reported)
GUIDANCE_UNCOUNTED = {"pixart_alpha", "pixart_sigma", "kandinsky22", "kandinsky22_decoder"}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {key: build_family(key, root / key) for key in KEYS}


def test_every_family_is_known():
    assert set(KEYS) <= set(PIPELINES), set(KEYS) - set(PIPELINES)
    # the families the model card table names, at least (Würstchen / Stable Cascade when diffusers builds them)
    assert {"sd15", "sd2", "sdxl", "lcm", "sd3", "sd35", "flux_schnell", "flux_dev", "pixart_alpha", "pixart_sigma",
            "sana", "kandinsky22", "kandinsky3", "unclip", "playground", "lumina2", "qwen_image", "z_image", "hidream",
            "cogview3plus", "cogview4", "auraflow", "sana_sprint", "kolors"} <= set(KEYS)


@pytest.mark.parametrize("key", KEYS)
def test_family_loads_through_the_runner_and_generates(folders, key):
    from benchmark.models.text_to_image import DiffusersTextToImage, check_text_to_image, load_text_to_image

    folder = str(folders[key])
    assert check_text_to_image(folder, device="cpu", overrides=CALL_ARGUMENTS[key]) == PIPELINES[key]
    model = load_text_to_image(folder, device="cpu", **CALL_ARGUMENTS[key])
    assert isinstance(model, DiffusersTextToImage) and type(model.pipe).__name__ == PIPELINES[key]
    out = model.generate(PROMPTS, SEEDS)
    assert [im.size for im in out.images] == [IMAGE_SIZES[key]] * 2
    width, height = IMAGE_SIZES[key]
    # the resolution is always recorded, as the size of the images made
    recorded = (model.settings.get("width"), model.settings.get("height"))
    assert recorded == (width, height) or model.settings.get("image_size") == [width, height], model.settings
    steps = {k for k in CALL_ARGUMENTS[key] if k.endswith("num_inference_steps")}
    assert steps and all(model.setting_sources[k] == "--set" for k in steps)
    # guidance recorded before the call is guidance run (a combined pipeline of several denoisers records none)
    if model.settings.get("guidance"):
        assert model.guidance_check.done
        ran = getattr(model.guidance_check, "record_ran", None)
        if key in GUIDANCE_UNCOUNTED:
            assert ran is None, f"{key} is counted now: take it out of GUIDANCE_UNCOUNTED"
        else:
            assert ran["classifier_free"] is model.settings["guidance"]["classifier_free"]


def test_a_decoder_folder_without_its_prior_is_refused_in_one_line(folders, tmp_path):
    import shutil

    from benchmark.models import MalformedSpecError
    from benchmark.models.text_to_image import check_text_to_image

    if "kandinsky22_decoder" not in folders:
        pytest.skip("this diffusers cannot build the Kandinsky 2.2 decoder")
    bare = tmp_path / "decoder"
    shutil.copytree(folders["kandinsky22_decoder"], bare)
    (bare / "README.md").unlink(missing_ok=True)
    with pytest.raises(MalformedSpecError, match=r"KandinskyV22Pipeline is a decoder; .* names none") as exc:
        check_text_to_image(str(bare), device="cpu")
    assert "\n" not in str(exc.value)


def test_an_image_to_image_folder_is_refused_in_one_line(folders, tmp_path):
    import shutil

    from benchmark.models import MalformedSpecError
    from benchmark.models.text_to_image import check_text_to_image

    folder = tmp_path / "img2img"
    shutil.copytree(folders["sd15"], folder)
    index = json.loads((folder / "model_index.json").read_text())
    (folder / "model_index.json").write_text(json.dumps({**index, "_class_name": "KandinskyV22Pipeline"}))
    with pytest.raises(MalformedSpecError, match="not a text-to-image pipeline|is a decoder"):
        check_text_to_image(str(folder), device="cpu")


@pytest.mark.parametrize("key", ["sd15", "kandinsky3", "kolors"])
def test_a_negative_prompt_string_runs_beside_a_batch_of_prompts(folders, key):
    """These pipelines (and Kandinsky 2.1's prior and decoder) raise TypeError for a str negative prompt
    beside a list of prompts; the runner repeats it per prompt (Kolors' card passes ``negative_prompt=""``,
    Kandinsky 2.1's a phrase)."""
    from benchmark.models.text_to_image import load_text_to_image

    model = load_text_to_image(str(folders[key]), device="cpu", negative_prompt="blurry", **CALL_ARGUMENTS[key])
    assert len(model.generate(PROMPTS, SEEDS).images) == 2
    assert model.settings["negative_prompt"] == "blurry" and model.setting_sources["negative_prompt"] == "--set"


def test_hidream_records_the_size_it_makes_not_the_size_asked(folders):
    from benchmark.models.text_to_image import load_text_to_image

    model = load_text_to_image(str(folders["hidream"]), device="cpu", num_inference_steps=2, height=64, width=64)
    image = model.generate(PROMPTS[:1], SEEDS[:1]).images[0]
    assert image.size == IMAGE_SIZES["hidream"]  # 64 px asked, its native 128 px area made
    assert (model.settings["width"], model.settings["height"]) == image.size
    assert model.settings["size_asked"] == [64, 64]
    assert "rescaled by HiDreamImagePipeline" in model.setting_sources["width"]


# ----------------------------------------------------------------- the CUDA set-up, simulated


class CompileRecorder:
    """``torch.compile`` replaced: records the module whose call it was asked to compile and
    returns it unchanged (or a callable that fails, to test the fallback)."""

    def __init__(self, fail: bool = False):
        self.modules, self.options, self.fail = [], [], fail

    def __call__(self, fn, **options):
        self.modules.append(fn.__self__)
        self.options.append(options)
        if self.fail:
            def broken(*args, **kwargs):
                raise RuntimeError("inductor could not lower this graph (simulated)")
            return broken
        return fn


def _simulated_cuda_model(folder: Path, overrides: dict, **speed):
    """The folder's pipeline on the CPU, wrapped as if on CUDA: layout, compile and static batches
    run their real code; the kernels stay the CPU's."""
    import torch

    from benchmark.models.diffusers_model import DiffusersTextToImage, PipelineIdentity, SpeedChoice, load_diffusers
    from benchmark.models.text_to_image import pipeline_choice

    choice = pipeline_choice(str(folder))
    pipe, _, _ = load_diffusers(str(folder), revision=None, device=torch.device("cpu"), dtype=torch.float32,
                                 loader=choice.loader, cls=choice.cls, offload="none")
    return DiffusersTextToImage(pipe, PipelineIdentity(str(folder)), device=torch.device("cuda"),
                                dtype=torch.float32, overrides=dict(overrides), speed=SpeedChoice(**speed))


def _count_calls(pipe) -> tuple[dict[str, int], list]:
    """Calls of each component while ``counting`` (the returned list) is not empty."""
    import torch

    calls: dict[str, int] = {}
    counting: list = []

    def hook(name):
        def count(*args):
            if counting:
                calls[name] += 1
        return count

    for name, module in pipe.components.items():
        if isinstance(module, torch.nn.Module):
            calls.setdefault(name, 0)
            module.register_forward_hook(hook(name))
    return calls, counting


#: at this many steps per stage, a module that denoises runs at least this often in one batch, while
#: text encoders (prompt and negative prompt), image encoders and VAEs run at most twice
STEPS = 5
#: SANA-Sprint runs 2 steps (its intermediate timestep is defined for 2 only; None, which diffusers
#: takes for other counts, is not a float its signature allows): with no negative prompt, its text
#: encoder and VAE still run once a batch
STEPS_OF = {"sana_sprint": 2}


@pytest.mark.parametrize("key", KEYS)
def test_simulated_cuda_compiles_the_modules_that_denoise(folders, key, tmp_path, monkeypatch):
    import torch

    from audit_requests import generate_into
    from benchmark.runner import build_probes

    recorder = CompileRecorder()
    monkeypatch.setattr(torch, "compile", recorder)
    steps = STEPS_OF.get(key, STEPS)
    call = {k: (steps if k.endswith("num_inference_steps") else v) for k, v in CALL_ARGUMENTS[key].items()}
    model = _simulated_cuda_model(folders[key], call)
    calls, counting = _count_calls(model.pipe)
    warm_up = model.warm_up
    monkeypatch.setattr(model, "warm_up", lambda: [warm_up(), counting.append(True)][0])  # count the batch only
    summary = generate_into(tmp_path / "run", model, build_probes(["gep_neutral"]), batch_size=2, limit=2)
    assert summary.n_generated == 2
    config = json.loads((tmp_path / "run" / "run_config.json").read_text())
    speed = config["speed"]
    compiled = speed["compiled"]
    by_name = model.pipe.components
    # what run_config.json records is what was compiled: the recorder saw exactly those modules
    assert sorted(id(m) for m in recorder.modules) == sorted(id(by_name[n]) for n in compiled)
    assert all(o == {"mode": "default", "fullgraph": True, "dynamic": False} for o in recorder.options)
    assert speed["compile"] == "default" and "compile_error" not in speed
    # every module the denoising loops call at every step is compiled; every compiled one runs
    repeated = {n for n, c in calls.items() if c >= steps}
    assert repeated and repeated <= set(compiled), (calls, compiled)
    assert all(calls[n] > 0 for n in compiled), (calls, compiled)
    assert config["settings"]["compile"] == "default" and config["settings"]["static_batch"] == 2
    # channels-last for UNets, never for a DiT of linear layers (FLUX, SD3, PixArt)
    for name in speed["channels_last"]:
        assert type(by_name[name]).__name__ not in ("FluxTransformer2DModel", "SD3Transformer2DModel",
                                                    "PixArtTransformer2DModel")
    for name in compiled:
        if "UNet" in type(by_name[name]).__name__ and type(by_name[name]).__name__ != "StableCascadeUNet":
            assert name in speed["channels_last"], (name, speed)


def test_a_failed_compile_is_undone_recorded_and_the_run_goes_on(folders, tmp_path, monkeypatch, capsys):
    import torch

    from audit_requests import generate_into
    from benchmark.runner import build_probes, read_manifest

    monkeypatch.setattr(torch, "compile", CompileRecorder(fail=True))
    model = _simulated_cuda_model(folders["flux_schnell"], CALL_ARGUMENTS["flux_schnell"])
    summary = generate_into(tmp_path / "run", model, build_probes(["gep_neutral"]), batch_size=2, limit=2)
    assert summary.n_generated == 2 and len(read_manifest(tmp_path / "run")) == 2
    speed = json.loads((tmp_path / "run" / "run_config.json").read_text())["speed"]
    assert speed["compile"] is False and speed["compiled"] == []
    assert speed["compile_error"] == "RuntimeError: inductor could not lower this graph (simulated)"
    err = capsys.readouterr().err
    assert "torch.compile of transformer failed (RuntimeError: inductor could not lower" in err
    assert "generating uncompiled" in err


def test_a_failed_compile_asked_for_explicitly_stops_the_run(folders, tmp_path, monkeypatch):
    import torch

    from audit_requests import generate_into
    from benchmark.runner import build_probes

    monkeypatch.setattr(torch, "compile", CompileRecorder(fail=True))
    model = _simulated_cuda_model(folders["sd3"], CALL_ARGUMENTS["sd3"], compile="default")
    with pytest.raises(RuntimeError, match=r"torch.compile of transformer failed .*; run with --no-compile"):
        generate_into(tmp_path / "run", model, build_probes(["gep_neutral"]), batch_size=2, limit=2)


def test_offload_needs_a_gpu_and_is_checked_before_loading(folders):
    from benchmark.models import DeviceUnavailableError, MalformedSpecError
    from benchmark.models.text_to_image import check_text_to_image

    with pytest.raises(DeviceUnavailableError, match="--offload model moves weights between the CPU and a CUDA GPU"):
        check_text_to_image(str(folders["sd15"]), device="cpu", offload="model")
    with pytest.raises(MalformedSpecError, match="unknown offload mode 'disk'"):
        check_text_to_image(str(folders["sd15"]), device="cpu", offload="disk")


# ------------------------------------------------------- under a Hub ID, from a local cache


def _run_cli(args: list[str], hub_cache: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "T2IBENCH_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)


@pytest.fixture(scope="module")
def hub_cache(folders, tmp_path_factory):
    cache = tmp_path_factory.mktemp("hf-hub-cache")
    for key, model_id in HUB_IDS.items():
        if key in folders:
            for each in (model_id, *ALSO_CACHED_AS.get(key, ())):
                install_in_hub_cache(folders[key], cache, each)
    install_in_hub_cache(folders["sd15"], cache, "someorg/my-finetune")
    return cache


def test_every_family_loads_under_its_hub_id_with_its_card_settings(folders, hub_cache, tmp_path):
    """One process, offline: each family loaded from the cache by its Hub ID, one 2-step image;
    the steps come from --set, every other setting the table gives from the model card."""
    script = tmp_path / "load_all.py"
    script.write_text(
        "import json, sys\n"
        "from benchmark import frozen_imports\n"
        "frozen_imports.install()  # diffusers & co. load as under t2ibench\n"
        "from benchmark.models.text_to_image import load_text_to_image\n"
        "out = {}\n"
        "for key, model_id, call in json.loads(sys.argv[1]):\n"
        "    model = load_text_to_image(model_id, device='cpu', **call)\n"
        "    image = model.generate(['a photo of a person'], [3]).images[0]\n"
        "    out[model_id] = {'size': list(image.size), 'sources': model.setting_sources, 'settings': model.settings,\n"
        "                     'ran': getattr(model.guidance_check, 'record_ran', None)}\n"
        "print(json.dumps(out, default=str))\n")
    # at the tiny size (the cards' 512-1024 px would take minutes on a CPU) and 2 steps
    jobs = [(k, HUB_IDS[k], {**CALL_ARGUMENTS[k], **({} if k == "unclip" else dict(zip(("width", "height"),
                                                                                    IMAGE_SIZES[k])))})
            for k in KEYS if k in HUB_IDS]
    jobs += [(k, other, call) for k, model_id, call in jobs for other in ALSO_CACHED_AS.get(k, ())]
    env = {**os.environ, "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(script), json.dumps(jobs)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    from benchmark.models.model_cards import card_row

    for key, model_id, call in jobs:
        row, got = card_row(model_id), out[model_id]
        assert got["size"] == list(IMAGE_SIZES[key]), key
        assert got["settings"]["commit"] == "0123456789abcdef0123456789abcdef01234567"
        for setting, value in row.settings.items():
            if setting in call:
                continue
            assert got["settings"][setting] == value, (model_id, setting)
            assert got["sources"][setting] == row.source_text, (model_id, setting)
        if model_id in CARD_GUIDANCE:  # recorded before the call, and what the first call ran
            assert got["settings"]["guidance"]["classifier_free"] is CARD_GUIDANCE[model_id], model_id
            assert got["ran"]["classifier_free"] is CARD_GUIDANCE[model_id], model_id
    assert set(CARD_GUIDANCE) <= set(out)
    assert out["Qwen/Qwen-Image"]["settings"]["negative_prompt"] == " "  # its card's: true CFG on


@pytest.fixture(scope="module")
def flux_audit(hub_cache, cache, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """FLUX.1 [schnell] audited from the Hub cache at the tiny size, no --set but the size: read by the
    card-settings test and the end-to-end test alike (one process that loads the model, not two)."""
    out = tmp_path_factory.mktemp("flux-audit") / "flux"
    proc = _run_cli(["run", "--model", "black-forest-labs/FLUX.1-schnell", "--suites", "gep_neutral", "--limit", "2",
                     "--encoder", "builtin:tiny-clip", "--n-resamples", "20", "--set", "height=64", "--set",
                     "width=64", "--out", str(out)], hub_cache, cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, out


def test_turbo_and_schnell_from_the_cache_run_at_their_cards_settings(hub_cache, cache, flux_audit, tmp_path):
    """No --set but the tiny size: SDXL-Turbo and FLUX.1 [schnell] generate at their cards' steps and
    guidance, and run_config.json says where each setting came from."""
    turbo = tmp_path / "sdxl-turbo"
    proc = _run_cli(["generate", "--model", "stabilityai/sdxl-turbo", "--suites", "gep_neutral", "--limit", "1",
                     "--quiet", "--set", "height=64", "--set", "width=64", "--out", str(turbo)], hub_cache, cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for model_id, out, steps, extra in [("stabilityai/sdxl-turbo", turbo, 1, {}),
                                        ("black-forest-labs/FLUX.1-schnell", flux_audit[1], 4,
                                         {"max_sequence_length": 256})]:
        config = json.loads((out / "run_config.json").read_text())
        card = f"model card (https://huggingface.co/{model_id})"
        assert config["settings"]["num_inference_steps"] == steps and config["settings"]["guidance_scale"] == 0.0
        for key, value in extra.items():
            assert config["settings"][key] == value
        assert config["setting_sources"]["num_inference_steps"] == card
        assert config["setting_sources"]["guidance_scale"] == card
        assert config["setting_sources"]["height"] == "--set"


def test_flux_audited_end_to_end_from_the_cache_and_an_unknown_model_says_pipeline_defaults(hub_cache, cache,
                                                                                            flux_audit, tmp_path):
    proc, out = flux_audit
    # the plan prints every setting with its value and source
    assert "num_inference_steps=4  (model card (https://huggingface.co/black-forest-labs/FLUX.1-schnell))" in proc.stderr
    assert "height=64  (--set)" in proc.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["model"]["id"] == "black-forest-labs/FLUX.1-schnell"
    assert (out / "report" / "report.html").is_file()

    proc = _run_cli(["run", "--model", "someorg/my-finetune", "--suites", "gep_neutral", "--limit", "1",
                     "--encoder", "builtin:tiny-clip", "--n-resamples", "20", "--set", "num_inference_steps=2",
                     "--set", "height=64", "--set", "width=64", "--out", str(tmp_path / "unknown")], hub_cache, cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "num_inference_steps=2  (--set)" in proc.stderr
    assert "guidance_scale=7.5  (no card row: pipeline default)" in proc.stderr  # nobody chose it, and it says so
    assert "someorg/my-finetune is not in the model card table" not in proc.stderr  # its steps come from --set
