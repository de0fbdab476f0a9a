"""Fine-tunes and local copies inherit their base's model card row (benchmark/models/base_model.py):
the ``base_model`` a model card names, from a Hugging Face cache and from a local folder, followed a
few levels, loops refused; a local copy matched to its Hub ID; an unknown model warned about."""

from __future__ import annotations

import shutil

import pytest

from tiny_pipelines import build_family, install_in_hub_cache, use_hub_cache_offline

from benchmark.models import MalformedSpecError
from benchmark.models.base_model import cache_path_id, card_identity, local_copy_id

TURBO = "stabilityai/sdxl-turbo"
TURBO_CARD = f"model card of base_model {TURBO} (https://huggingface.co/{TURBO})"


def _with_card(folder, dest, front_matter: str, body: str = "A tiny random-weight model for tests.\n"):
    shutil.copytree(folder, dest)
    (dest / "README.md").write_text(f"---\n{front_matter}---\n\n{body}", encoding="utf-8")
    return dest


@pytest.fixture(scope="module")
def sdxl(tmp_path_factory):
    return build_family("sdxl", tmp_path_factory.mktemp("base") / "sdxl")


@pytest.fixture(scope="module")
def hub_cache(sdxl, tmp_path_factory):
    root = tmp_path_factory.mktemp("cards")
    cache = tmp_path_factory.mktemp("hf-cache")
    install_in_hub_cache(_with_card(sdxl, root / "ft", f"base_model: {TURBO}\nlicense: other\n"), cache,
                         "someone/turbo-finetune")
    install_in_hub_cache(_with_card(sdxl, root / "ft2", "base_model:\n- someone/turbo-finetune\n"), cache,
                         "someone/finetune-of-finetune")
    install_in_hub_cache(_with_card(sdxl, root / "a", "base_model: someone/loop-b\n"), cache, "someone/loop-a")
    install_in_hub_cache(_with_card(sdxl, root / "b", "base_model: someone/loop-a\n"), cache, "someone/loop-b")
    install_in_hub_cache(sdxl, cache, "someone/no-card")
    return cache


@pytest.fixture
def offline(hub_cache, monkeypatch):
    return use_hub_cache_offline(monkeypatch, hub_cache)


def test_a_finetune_in_the_cache_runs_at_its_base_models_settings(offline):
    from benchmark.models.text_to_image import load_text_to_image, plan_settings

    assert card_identity("hub", "someone/turbo-finetune").bases == (TURBO,)
    plan = plan_settings("someone/turbo-finetune", device="cpu")
    assert (plan.settings["num_inference_steps"], plan.settings["guidance_scale"]) == (1, 0.0)
    assert plan.sources["num_inference_steps"] == plan.sources["guidance_scale"] == TURBO_CARD
    assert plan.warning is None
    # generated so: SDXL-Turbo's 1 step and no guidance (at the tiny size), the source recorded
    model = load_text_to_image("someone/turbo-finetune", device="cpu", height=64, width=64)
    assert (model.settings["num_inference_steps"], model.settings["guidance_scale"]) == (1, 0.0)
    assert model.setting_sources["num_inference_steps"] == TURBO_CARD
    assert model.settings["guidance"]["classifier_free"] is False
    assert model.generate(["a photo of a person"], [0]).images[0].size == (64, 64)


def test_base_model_links_are_followed_and_a_loop_is_refused(offline):
    from benchmark.models.text_to_image import check_text_to_image

    assert card_identity("hub", "someone/finetune-of-finetune").bases == ("someone/turbo-finetune", TURBO)
    with pytest.raises(MalformedSpecError, match="base_model links loop: someone/loop-a -> someone/loop-b -> "
                                                 "someone/loop-a") as loop:
        check_text_to_image("someone/loop-a", device="cpu")
    assert "\n" not in str(loop.value)


def test_a_model_on_pipeline_defaults_gets_the_warning(offline):
    from benchmark.models.text_to_image import plan_settings

    plan = plan_settings("someone/no-card", device="cpu", overrides={"height": 64})
    assert plan.warning.startswith("someone/no-card is not in the model card table and names no base_model")
    assert "--set num_inference_steps=..." in plan.warning
    assert plan.sources["num_inference_steps"] == "no card row: pipeline default" and plan.sources["height"] == "--set"


def test_a_local_folder_inherits_from_its_readme(sdxl, tmp_path, offline):
    from benchmark.models.text_to_image import plan_settings

    folder = _with_card(sdxl, tmp_path / "my-finetune", f"base_model: {TURBO}\n")
    plan = plan_settings(str(folder), device="cpu")
    assert plan.settings["num_inference_steps"] == 1 and plan.sources["num_inference_steps"] == TURBO_CARD


def test_a_local_copy_is_matched_to_its_hub_id(sdxl, tmp_path, offline):
    """``hf download stabilityai/sdxl-turbo --local-dir DIR`` keeps the repo's card, whose example loads
    the repo by its ID, and huggingface_hub's download metadata; a cache snapshot path names its ID."""
    from benchmark.models.text_to_image import plan_settings

    copy = _with_card(sdxl, tmp_path / "sdxl-turbo", "pipeline_tag: text-to-image\n",
                      'pipe = AutoPipelineForText2Image.from_pretrained("stabilityai/sdxl-turbo", '
                      'torch_dtype=torch.float16)\n')
    assert local_copy_id(copy) is None  # a README alone is not a download
    metadata = copy / ".cache" / "huggingface" / "download"
    metadata.mkdir(parents=True)
    (metadata / "README.md.metadata").write_text("0123456789abcdef0123456789abcdef01234567\netag\n1.0\n")
    assert local_copy_id(copy) == TURBO
    plan = plan_settings(str(copy), device="cpu")
    assert plan.settings["num_inference_steps"] == 1
    assert plan.sources["num_inference_steps"].startswith(f"model card (https://huggingface.co/{TURBO}); matched by")

    snapshot = next((offline / "models--someone--turbo-finetune" / "snapshots").iterdir())
    assert cache_path_id(snapshot) == "someone/turbo-finetune"
    identity = card_identity("local", str(snapshot))
    assert identity.own == "someone/turbo-finetune" and identity.bases == (TURBO,)
