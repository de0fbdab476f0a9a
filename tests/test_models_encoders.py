"""CLIP encoders: builtin:tiny-clip through open_clip's loader, hf: through CLIPModel, the
offline CLIP tokenizer against open_clip's."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from benchmark.models.encoders import (
    DEFAULT_ENCODER,
    HFClipEncoder,
    OpenClipEncoder,
    load_encoder,
)
from benchmark.tasks.mcas.inputs import GENERATED_BIAS_ENCODERS

PROMPTS = [
    "A photo of a lawyer.",
    "a woman who works as a nurse",
    "A person who works as an air conditioning installer",
    "two dogs, left of a fire-hydrant!!",
    "naïve café: 123 CEO's desk",
    "the person looks like a male or a female?",
    "Question: Is the person wearing a tie? Answer:",
]


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    out = [Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)) for _ in range(5)]
    out.append(Image.new("L", (40, 40), 128))  # grey-scale input is converted to RGB
    return out


def test_tiny_clip_roundtrip_through_open_clip_local_dir(cache, images):
    import torch
    from safetensors.torch import load_file

    enc = load_encoder("builtin:tiny-clip")
    assert isinstance(enc, OpenClipEncoder) and enc.name == "builtin:tiny-clip" and enc.is_builtin
    folder = cache / "builtin" / "tiny-clip"
    assert (folder / "open_clip_config.json").is_file()
    saved = load_file(str(folder / "open_clip_model.safetensors"))
    state = enc.model.state_dict()
    assert set(saved) == set(state) and all(torch.equal(saved[k], state[k]) for k in saved)

    img = enc.embed_images(images)
    txt = enc.embed_texts(PROMPTS)
    assert img.shape == (6, enc.dim) and txt.shape == (len(PROMPTS), enc.dim) and enc.dim == 16
    assert img.dtype == np.float32 and txt.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(img, axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(txt, axis=1), 1, atol=1e-5)
    assert enc.embed_images([]).shape == (0, 16)

    # batching does not change embeddings
    enc.batch_size = 2
    np.testing.assert_allclose(enc.embed_images(images), img, atol=1e-5)
    np.testing.assert_allclose(enc.embed_texts(PROMPTS), txt, atol=1e-5)
    enc.batch_size = 32

    # the tensor path (pipeline outputs in [0, 1]) agrees with the PIL path
    x = torch.stack([torch.from_numpy(np.asarray(im.convert("RGB"))).permute(2, 0, 1) / 255.0 for im in images[:5]])
    tensor_emb = enc.embed_image_tensors(x)
    assert tensor_emb.shape == (5, 16)
    assert ((tensor_emb * img[:5]).sum(1) > 0.95).all()


def test_hf_clip_encoder_matches_clipmodel_forward(tmp_path, images):
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    from benchmark.models.clip_tokenizer import build_clip_tokenizer

    torch.manual_seed(0)
    config = CLIPConfig(
        text_config={"vocab_size": 49408, "hidden_size": 32, "intermediate_size": 37, "num_attention_heads": 4,
                     "num_hidden_layers": 2, "max_position_embeddings": 77},
        vision_config={"hidden_size": 32, "intermediate_size": 37, "num_attention_heads": 4, "num_hidden_layers": 2,
                       "image_size": 32, "patch_size": 8},
        projection_dim=16,
    )
    model = CLIPModel(config)
    processor = CLIPProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
        tokenizer=build_clip_tokenizer(tmp_path / "tok"),
    )
    model.save_pretrained(tmp_path / "clip")
    processor.save_pretrained(tmp_path / "clip")

    enc = load_encoder(f"hf:{tmp_path / 'clip'}")
    assert isinstance(enc, HFClipEncoder) and enc.dim == 16
    img = enc.embed_images(images)
    txt = enc.embed_texts(PROMPTS[:2])
    np.testing.assert_allclose(np.linalg.norm(img, axis=1), 1, atol=1e-5)
    inputs = processor(images=[im.convert("RGB") for im in images], text=PROMPTS[:2], return_tensors="pt",
                       padding=True)
    with torch.no_grad():
        out = model(**inputs)
    ref_img = torch.nn.functional.normalize(out.image_embeds, dim=-1).numpy()
    ref_txt = torch.nn.functional.normalize(out.text_embeds, dim=-1).numpy()
    np.testing.assert_allclose(img, ref_img, atol=1e-5)
    np.testing.assert_allclose(txt, ref_txt, atol=1e-5)


def test_encoder_constants_are_known_to_open_clip():
    import open_clip

    assert DEFAULT_ENCODER == "open_clip:ViT-L-14:openai"
    assert len(GENERATED_BIAS_ENCODERS) == 6
    for spec in (DEFAULT_ENCODER, *GENERATED_BIAS_ENCODERS):
        _, arch, tag = spec.split(":")
        assert open_clip.get_pretrained_cfg(arch, tag), spec


def test_offline_clip_tokenizer_matches_open_clip(cache):
    import open_clip
    from transformers import AutoTokenizer

    from benchmark.models.tiny import ensure_builtin

    ref = open_clip.get_tokenizer("ViT-B-32")
    # the tokenizer saved inside builtin:tiny-sd, loaded back as diffusers does
    tok = AutoTokenizer.from_pretrained(ensure_builtin("tiny-sd") / "tokenizer")
    assert len(tok) == 49408 and tok.model_max_length == 77
    assert (tok.bos_token_id, tok.eos_token_id) == (49406, 49407)
    for prompt in PROMPTS:
        ids = ref([prompt])[0].tolist()
        ids = ids[: ids.index(49407) + 1]
        assert tok(prompt)["input_ids"] == ids, prompt
    padded = tok(PROMPTS[0], padding="max_length", max_length=77)["input_ids"]
    assert len(padded) == 77
