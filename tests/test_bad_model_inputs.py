"""Bad model inputs end in one line, exit 2, no traceback and nothing written (issues 48 and 51):
model cards whose front matter cannot be read (unclosed YAML, a Python tag, nesting 5,000 deep,
50 MB, aliases), folders that are not text-to-image (image-to-image, inpainting, ControlNet, the
SDXL refiner), a folder whose class contradicts its card's base_model, LoRA scales that are no
finite number in range, a scale on --unet, more LoRAs than requests allow, a LoRA card naming
another architecture's base or no trigger. Each is refused before the heavy libraries load
(checked in a fresh process). The folders hold no weights: none is needed to refuse them."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest

from benchmark.cli import main
from benchmark.cli_types import LORA_SCALE_RANGE, MAX_LORAS, lora_reference, unet_reference
from benchmark.models.base_model import base_model_of
from benchmark.models.card_front_matter import MAX_DEPTH, parse_front_matter

SD_INDEX = {"_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.42.1",
            "unet": ["diffusers", "UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"],
            "text_encoder": ["transformers", "CLIPTextModel"], "tokenizer": ["transformers", "CLIPTokenizer"],
            "scheduler": ["diffusers", "PNDMScheduler"]}
EMPTY_SAFETENSORS = struct.pack("<Q", 2) + b"{}"  # a valid safetensors file with no tensor


def model_folder(root, name, *, class_name="StableDiffusionPipeline", front_matter=None):
    folder = root / name
    folder.mkdir()
    (folder / "model_index.json").write_text(json.dumps({**SD_INDEX, "_class_name": class_name}))
    if front_matter is not None:
        (folder / "README.md").write_text(f"---\n{front_matter}\n---\n\n# {name}\n", encoding="utf-8")
    return folder


def lora_folder(root, name, front_matter=None):
    folder = root / name
    folder.mkdir()
    (folder / "pytorch_lora_weights.safetensors").write_bytes(EMPTY_SAFETENSORS)
    if front_matter is not None:
        (folder / "README.md").write_text(f"---\n{front_matter}\n---\n\n# {name}\n", encoding="utf-8")
    return folder


def _deep_block(levels: int) -> str:
    return "".join("  " * i + "base_model:\n" for i in range(levels)) + "  " * levels + "x: 1"


def _card(front_matter):
    return lambda root: ["--model", model_folder(root, "m", front_matter=front_matter)]


def _class(name, front_matter=None):
    return lambda root: ["--model", model_folder(root, "m", class_name=name, front_matter=front_matter)]


def _lora_text(text):
    return lambda root: ["--model", model_folder(root, "m"), "--lora", text]


def _lora_card(front_matter, *extra):
    return lambda root: ["--model", model_folder(root, "m"), "--lora", lora_folder(root, "l", front_matter), *extra]


#: (case, the command line's model options (built in a fresh folder), what the one line says)
CASES = [
    ("card: unclosed list", _card("base_model: [unclosed"), "ParserError"),
    ("card: python tag", _card("base_model: !!python/object/apply:os.system ['touch PWNED']"), "ConstructorError"),
    ("card: 5,000 levels deep (flow)", _card("base_model: " + "[" * 5000 + "]" * 5000), "nesting"),
    ("card: 5,000 levels deep (block)", _card(_deep_block(5000)), "longer than 256 KiB"),
    (f"card: {MAX_DEPTH + 8} levels deep", _card(_deep_block(MAX_DEPTH + 8)), f"nests deeper than {MAX_DEPTH}"),
    ("card: 50 MB", _card("base_model: a/b\nblob: '" + "a" * (50 * 1024 * 1024) + "'"), "longer than 256 KiB"),
    ("card: aliases", _card("a: &x [1, 2]\nb: *x"), "anchors or aliases"),
    ("card: a list", _card("- a\n- b"), "not a mapping"),
    ("card: a number as a key", _card("1: a"), "not a text name"),
    ("class: img2img", _class("StableDiffusionImg2ImgPipeline"), "image-to-image"),
    ("class: inpainting", _class("StableDiffusionInpaintPipeline"), "inpainting"),
    ("class: ControlNet", _class("StableDiffusionControlNetPipeline"), "ControlNet"),
    ("class: SDXL refiner", _class("StableDiffusionXLImg2ImgPipeline"), "image-to-image"),
    ("class: prior", _class("KandinskyV22PriorPipeline"), "a prior"),
    ("class: mislabelled base", _class("StableDiffusionXLPipeline", "base_model: black-forest-labs/FLUX.1-schnell"),
     "a FluxPipeline (FLUX.1)"),
    ("class: mislabelled base, old name", _class("StableDiffusionPipeline", "base_model: THUDM/CogView4-6B"),
     "CogView4Pipeline"),
    ("--lora X:nan", _lora_text("X:nan"), "scale nan is not a finite number"),
    ("--lora X:inf", _lora_text("X:inf"), "scale inf is not a finite number"),
    ("--lora X:abc", _lora_text("X:abc"), "scale 'abc' is not a number"),
    ("--lora X:-1e30", _lora_text("X:-1e30"), "scale -1e30 is outside -10 to 10"),
    ("--lora X:1e308", _lora_text("X:1e308"), "scale 1e308 is outside -10 to 10"),
    ("--unet X:0.5", lambda root: ["--model", model_folder(root, "m"), "--unet", "X:0.5"], "takes no scale ('0.5')"),
    (f"{MAX_LORAS + 1} LoRAs", lambda root: ["--model", model_folder(root, "m"),
                                             *[a for i in range(MAX_LORAS + 1)
                                               for a in ("--lora", lora_folder(root, f"l{i}"))]],
     f"at most {MAX_LORAS} LoRAs"),
    ("LoRA card: another architecture", _lora_card("base_model: black-forest-labs/FLUX.1-dev"),
     "a LoRA of another architecture"),
    ("LoRA card: unclosed", _lora_card("base_model: [unclosed"), "ParserError"),
    ("LoRA card: no trigger", _lora_card("base_model: stable-diffusion-v1-5/stable-diffusion-v1-5", "--lora-trigger"),
     "names no trigger"),
    ("--lora-trigger without --lora", lambda root: ["--model", model_folder(root, "m"), "--lora-trigger", "sks"],
     "goes with --lora"),
]


def _exit_status(argv):
    try:
        return main([str(a) for a in argv])
    except SystemExit as done:  # a usage error (argparse)
        return done.code


@pytest.mark.parametrize("case, model_options, fragment", CASES, ids=[c[0] for c in CASES])
def test_a_bad_model_input_is_one_line_and_writes_nothing(case, model_options, fragment, tmp_path, capsys,
                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)  # a tag that ran would leave ./PWNED here
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "run"
    status = _exit_status(["run", *model_options(tmp_path), "--out", out, "--suites", "gep_neutral", "--limit", "1",
                           "--quiet"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("WARNING:")]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("t2ibench"), err
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in err and len(lines[0]) < 600
    assert not out.exists() and not (tmp_path / "PWNED").exists()


def test_the_refusals_load_no_heavy_library(tmp_path):
    """In a fresh process, a refusal of each kind (a bad card, a class, a mislabelled base, a LoRA of
    another architecture) comes before torch, diffusers and transformers are imported."""
    argvs = [["--model", str(model_folder(tmp_path, "card", front_matter="base_model: [x"))],
             ["--model", str(model_folder(tmp_path, "i2i", class_name="StableDiffusionImg2ImgPipeline"))],
             ["--model", str(model_folder(tmp_path, "sdxl", class_name="StableDiffusionXLPipeline",
                                          front_matter="base_model: black-forest-labs/FLUX.1-schnell"))],
             ["--model", str(model_folder(tmp_path, "sd")), "--lora",
              str(lora_folder(tmp_path, "flux-lora", "base_model: black-forest-labs/FLUX.1-dev"))]]
    script = ("import sys, json\nfrom benchmark.cli import main\nstatus = []\n"
              f"for argv in {argvs!r}:\n"
              f"    status.append(main(['run', *argv, '--out', {str(tmp_path / 'run')!r}, '--quiet']))\n"
              "print(json.dumps([status, [m for m in ('torch', 'diffusers', 'transformers') if m in sys.modules]]))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    status, heavy = json.loads(proc.stdout.strip().splitlines()[-1])
    assert status == [2, 2, 2, 2], proc.stderr
    assert heavy == [], f"imported before refusing: {heavy}"
    assert len(proc.stderr.strip().splitlines()) == 4 and "Traceback" not in proc.stderr


#: base_model values that are not followed, each with the reason the warning line gives
UNFOLLOWED = [
    ("org/not a repo!!", "is not a Hub model id"),
    (["a/b", "c/d"], "lists 2 models"),
    (42, "is a int"),
    ({"id": "a/b"}, "is a dict"),
    ("just-a-name", "names no organisation"),
    ("org/" + "a" * 100, "characters long"),
]


@pytest.mark.parametrize("value, reason", UNFOLLOWED, ids=[str(v)[:20] for v, _ in UNFOLLOWED])
def test_an_unfollowed_base_model_says_why(value, reason):
    text = "base_model: " + json.dumps(value)  # JSON is YAML
    base, why = base_model_of(parse_front_matter(text, where="README.md"))
    assert base is None and reason in why and "\n" not in why
    assert base_model_of({"base_model": ["stabilityai/sdxl-turbo"]}) == ("stabilityai/sdxl-turbo", None)
    assert base_model_of({}) == (None, None) and base_model_of({"base_model": None}) == (None, None)


def test_the_warning_of_a_model_on_pipeline_defaults_gives_the_reason(tmp_path):
    """settings_warning carries base_model_of's reason (the run's plan and --quiet warnings print it)."""
    from benchmark.models.base_model import card_identity
    from benchmark.models.model_cards import SOURCE_NO_CARD, settings_warning

    folder = model_folder(tmp_path, "merge", front_matter="base_model:\n- a/b\n- c/d")
    identity = card_identity("local", str(folder))
    line = settings_warning(str(folder), {"num_inference_steps": SOURCE_NO_CARD, "guidance_scale": SOURCE_NO_CARD},
                            why=identity.unfollowed)
    assert "names no base_model that is (its card's base_model lists 2 models" in line and "\n" not in line


@pytest.mark.parametrize("text", ["X:0.5", "X:-2", "X:10", "org/name/file.safetensors:0.8", "org/name", "./a:b/c",
                                  "C:\\loras\\x.safetensors", "my:lora.safetensors"])
def test_scales_in_range_and_paths_with_colons_pass(text):
    assert lora_reference(text) == text
    low, high = LORA_SCALE_RANGE
    assert (low, high) == (-10.0, 10.0)


def test_the_queue_and_the_command_line_share_the_limits():
    import submissions.requests as requests

    assert requests.MAX_LORAS == MAX_LORAS and requests.LORA_SCALE_RANGE == LORA_SCALE_RANGE
    assert unet_reference("org/name/unet.safetensors") == "org/name/unet.safetensors"


def test_the_library_refuses_what_the_command_line_refuses(tmp_path):
    """load_text_to_image / check_text_to_image (no command line) give the same lines."""
    from benchmark.models import MalformedSpecError
    from benchmark.models.text_to_image import check_text_to_image

    base = model_folder(tmp_path, "m")
    for loras, fragment in ((["X:nan"], "not a finite number"), (["X:1e308"], "outside -10 to 10"),
                            ([str(lora_folder(tmp_path, f"l{i}")) for i in range(MAX_LORAS + 1)], "at most 4")):
        with pytest.raises(MalformedSpecError, match=fragment):
            check_text_to_image(str(base), loras=loras, device="cpu")
    flux_base = lora_folder(tmp_path, "flux", "base_model: black-forest-labs/FLUX.1-dev")
    with pytest.raises(MalformedSpecError, match="another architecture"):
        check_text_to_image(str(base), loras=[str(flux_base)], device="cpu")


def test_the_bench_script_prints_its_table(tmp_path):
    """bench/early_refusals.py in its smallest mode (this tree, one case, once): a well-formed table."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, str(root / "bench" / "early_refusals.py"), "--no-before", "--repeats", "1",
                           "--cases", "img2img", "mislabelled-base", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=300, cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((tmp_path / "early_refusals.json").read_text())
    assert [r["case"] for r in doc["rows"]] == ["img2img", "mislabelled-base"]
    for row in doc["rows"]:
        assert (row["now"]["status"], row["now"]["one_line"], row["now"]["heavy"]) == (2, True, "none"), row
    assert "| img2img |" in proc.stdout
