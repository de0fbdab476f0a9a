"""Tiny random-weight diffusers pipelines of the transformer-based (DiT) text-to-image families.

For the tests and ``bench/gpu_check.sh``: each builder writes a real diffusers pipeline
folder (``save_pretrained(..., safe_serialization=True)``) of the family's pipeline class,
scheduler and component layout (Stable Diffusion 3 / 3.5, FLUX.1 schnell / dev, PixArt-alpha /
-sigma, Sana, Lumina-Image 2.0, and Kandinsky 3, a UNet that needs the T5 tokenizer), with models small enough
to build in about a second and to generate 2-step images on a CPU. The weights are random,
so the images are meaningless; what these folders check is that the benchmark's loaders,
call arguments and output handling work for each family.

Configurations follow diffusers' own fast tests (``get_dummy_components``). Nothing is
downloaded: the CLIP tokenizers are the real CLIP BPE tokenizer built offline from
open_clip's vocabulary (:func:`benchmark.models.clip_tokenizer.build_clip_tokenizer`); the
T5 (Unigram) and Gemma (BPE with byte fallback) tokenizers are small real tokenizers built
here over a few hundred English words plus single characters, so any English prompt
encodes (a capitalised or unlisted word is spelled out in characters; a character outside
ASCII is ``<unk>`` for T5 and UTF-8 bytes for Gemma).

API::

    DIT_FAMILIES: dict[str, Callable[[Path], None]]   # key -> builder(folder); tiny_pipelines.build_family(key, folder) calls it

:data:`CALL_ARGUMENTS` holds, per key, the arguments of a quick 2-step call and
:data:`IMAGE_SIZES` the (width, height) of the images it returns.
"""

from __future__ import annotations

import functools
import string
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

from benchmark.models.clip_tokenizer import CLIP_MAX_LENGTH, CLIP_VOCAB_SIZE, build_clip_tokenizer

__all__ = ["DIT_FAMILIES", "CALL_ARGUMENTS", "IMAGE_SIZES"]

SEED = 0
#: width of the T5 / Gemma text encoders (and so of every caption projection)
TEXT_DIM = 32

#: per key, the arguments a quick 2-step call needs besides prompt / generator / output_type
#: (the pipelines' own defaults are sized for the real models: 256-1024 px, 20-50 steps).
CALL_ARGUMENTS: dict[str, dict] = {
    "sd3": {"num_inference_steps": 2, "height": 64, "width": 64},
    "sd35": {"num_inference_steps": 2, "height": 64, "width": 64},
    "flux_schnell": {"num_inference_steps": 2, "height": 64, "width": 64, "guidance_scale": 0.0},
    "flux_dev": {"num_inference_steps": 2, "height": 64, "width": 64},
    "pixart_alpha": {"num_inference_steps": 2, "height": 64, "width": 64},
    "pixart_sigma": {"num_inference_steps": 2, "height": 64, "width": 64},
    "sana": {"num_inference_steps": 2, "height": 64, "width": 64},
    "kandinsky3": {"num_inference_steps": 2, "height": 64, "width": 64},
    "lumina2": {"num_inference_steps": 2, "height": 64, "width": 64},
}

#: per key, the (width, height) of the images a call with CALL_ARGUMENTS returns
IMAGE_SIZES: dict[str, tuple[int, int]] = {key: (64, 64) for key in CALL_ARGUMENTS}

# The tokenizers' words: everyday prompt words and, so that Sana's long default
# "complex human instruction" costs ~250 tokens rather than ~1,000 characters, its words.
WORDS = """
a an the of in on at to for with and or by from as is are be this that it its up out
photo photograph picture image portrait painting drawing illustration render close
person people man men woman women boy girl child children kid baby adult old young elderly
teenager male female he she his her they their who face hair skin eyes smiling standing
sitting wearing holding looking working doctor nurse teacher engineer scientist lawyer
chef cook pilot farmer police officer firefighter soldier nurse student professor
ceo manager secretary janitor cashier clerk driver mechanic builder construction worker
artist musician singer dancer writer programmer developer designer accountant banker
judge politician athlete player housekeeper cleaner receptionist librarian pharmacist
dentist surgeon therapist psychologist social security guard waiter waitress bartender
hairdresser plumber electrician carpenter painter tailor baker butcher fisherman
rich poor happy sad angry beautiful ugly strong weak tall short fat thin smart
white black brown asian african american european indian latino hispanic arab middle eastern
red green blue yellow orange purple pink gray grey gold silver dark light bright color
colors colorful small big large round shape shapes sizes textures tiny huge
cat dog bird horse car bus house room kitchen office hospital school street city
table chair book computer phone window door tree flower flowers sky sun water
day night morning evening sunny rainy warm cold
realistic detailed high quality style studio lighting background front view full body
given user prompt generate enhanced that provides descriptions suitable generation
evaluate level detail if simple focus adding specifics about spatial relationships create
vivid concrete scenes already refine enhance existing details slightly without
overcomplicating here examples how transform prompts sleeping fluffy curled peacefully
windowsill surrounded pots blooming busy bustling scene dusk featuring glowing lamps
diverse crowd clothing double decker passing towering glass skyscrapers please only
description below avoid including any additional commentary evaluations
""".split()
# Single characters: a word outside WORDS is spelled out with them.
CHARS = string.ascii_letters + string.digits + string.punctuation


def _unique_words() -> list[str]:
    return list(dict.fromkeys(WORDS))


# ------------------------------------------------------------------------ tokenizers


@functools.lru_cache(maxsize=1)
def clip_tokenizer():
    """The offline CLIP tokenizer (pad = ``<|endoftext|>``), built once per process: the
    builders only save it, never change it."""
    with tempfile.TemporaryDirectory() as tmp:
        return build_clip_tokenizer(tmp)


def t5_tokenizer():
    """A real T5 (SentencePiece-style Unigram) tokenizer over WORDS and CHARS.

    Ids as in T5: ``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2. Whole words score higher than their
    spelling, so a listed word is one token. No ``<extra_id_*>`` sentinels: they only matter
    for T5's span-corruption pretraining.
    """
    from transformers import T5Tokenizer  # = T5TokenizerFast in transformers 5

    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -3.0)]
    vocab += [("\u2581" + w, -5.0) for w in _unique_words()]
    vocab += [(c, -10.0) for c in CHARS]
    # 512: T5's own limit; the pipelines pad / truncate to their max_sequence_length (<= 512).
    return T5Tokenizer(vocab=vocab, extra_ids=0, model_max_length=512)


def gemma_tokenizer():
    """A real Gemma (BPE with byte fallback) tokenizer over WORDS and CHARS.

    Ids as in Gemma: ``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2, ``<unk>`` 3, ``<mask>`` 4, then the
    256 byte tokens ``<0x00>``..``<0xFF>`` (so any text encodes), the characters, and one
    merge chain per word. Gemma marks spaces with "▁" and puts none before the first word, so
    each word gets a chain with and one without "▁"; the "▁" chains rank first, so the bare
    chains cannot split a "▁word" apart.
    """
    from transformers import GemmaTokenizer  # = GemmaTokenizerFast in transformers 5

    vocab: dict[str, int] = {}
    for token in ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]:
        vocab[token] = len(vocab)
    for byte in range(256):
        vocab[f"<0x{byte:02X}>"] = len(vocab)
    for c in "\u2581" + CHARS:
        vocab.setdefault(c, len(vocab))
    merges: list[tuple[str, str]] = []
    words = _unique_words()
    for form in ["\u2581" + w for w in words] + words:
        piece = form[0]
        for c in form[1:]:
            if piece + c not in vocab:
                vocab[piece + c] = len(vocab)
                merges.append((piece, c))
            piece += c
    # Sana's prompt (instruction + 300 tokens) fits well inside 8192; Gemma adds <bos>.
    return GemmaTokenizer(vocab=vocab, merges=merges, model_max_length=8192, add_bos_token=True)


# ------------------------------------------------------------------------ text encoders


def clip_text_encoder(hidden: int, with_projection: bool, positions: int = CLIP_MAX_LENGTH):
    """A tiny CLIP text model (``positions``: its position embeddings; HiDream's Long-CLIP has 248)."""
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    torch.manual_seed(SEED)
    # Ids of the offline tokenizer: BOS 49406, EOS (= pad) 49407. CLIP pools the text at the
    # first EOS token.
    config = CLIPTextConfig(
        vocab_size=CLIP_VOCAB_SIZE,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_attention_heads=2,
        num_hidden_layers=2,  # >= 2: SD3 reads the penultimate hidden state
        max_position_embeddings=positions,
        projection_dim=hidden,
        bos_token_id=49406,
        eos_token_id=49407,
        pad_token_id=49407,
    )
    cls = CLIPTextModelWithProjection if with_projection else CLIPTextModel
    return cls(config).eval()


def t5_encoder(vocab_size: int):
    from transformers import T5Config, T5EncoderModel

    torch.manual_seed(SEED)
    config = T5Config(
        vocab_size=vocab_size,
        d_model=TEXT_DIM,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        dropout_rate=0.0,
        feed_forward_proj="gated-gelu",  # T5 v1.1, the encoder of SD3 / Flux / PixArt / Kandinsky 3
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    return T5EncoderModel(config).eval()


def gemma_encoder(vocab_size: int):
    from transformers import Gemma2Config, Gemma2Model

    torch.manual_seed(SEED)
    config = Gemma2Config(
        vocab_size=vocab_size,
        hidden_size=TEXT_DIM,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=8192,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
    )
    return Gemma2Model(config).eval()


# ------------------------------------------------------------------------ autoencoders


def kl_vae(latent_channels: int, **overrides):
    from diffusers import AutoencoderKL

    torch.manual_seed(SEED)
    # Four blocks: vae_scale_factor 8 as in the real models, so a pipeline's own latent-size
    # arithmetic (1024 px -> 128 latent, SD3's position-embedding limit, PixArt's resolution
    # bins) behaves as it does for them.
    kwargs = dict(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4,
        block_out_channels=(8, 8, 8, 8),
        layers_per_block=1,
        norm_num_groups=4,
        latent_channels=latent_channels,
        sample_size=64,
    )
    kwargs.update(overrides)
    return AutoencoderKL(**kwargs).eval()


def dc_ae():
    """Sana's deep-compression autoencoder (DC-AE), tiny."""
    from diffusers import AutoencoderDC

    torch.manual_seed(SEED)
    # Six blocks: vae_scale_factor 32 as in Sana's DC-AE (f32), so the 512 px bin is a 16 latent.
    return AutoencoderDC(
        in_channels=3,
        latent_channels=4,
        attention_head_dim=4,
        encoder_block_types=("ResBlock",) * 5 + ("EfficientViTBlock",),
        decoder_block_types=("ResBlock",) * 5 + ("EfficientViTBlock",),
        encoder_block_out_channels=(8,) * 6,
        decoder_block_out_channels=(8,) * 6,
        encoder_qkv_multiscales=((),) * 5 + ((5,),),
        decoder_qkv_multiscales=((),) * 5 + ((5,),),
        encoder_layers_per_block=(1,) * 6,
        decoder_layers_per_block=(1,) * 6,
        downsample_block_type="conv",
        upsample_block_type="interpolate",
        decoder_norm_types="rms_norm",
        decoder_act_fns="silu",
        scaling_factor=0.41407,
    ).eval()


def flow_scheduler(**kwargs):
    from diffusers import FlowMatchEulerDiscreteScheduler

    return FlowMatchEulerDiscreteScheduler(**kwargs)


# ------------------------------------------------------------------------ families


def _build_sd3(folder: Path, *, sd35: bool) -> None:
    from diffusers import SD3Transformer2DModel, StableDiffusion3Pipeline

    torch.manual_seed(SEED)
    transformer = SD3Transformer2DModel(
        sample_size=8,  # latent; x vae_scale_factor 8 = 64 px by default
        patch_size=2,
        in_channels=4,
        out_channels=4,
        num_layers=2,
        attention_head_dim=8,
        num_attention_heads=4,
        joint_attention_dim=TEXT_DIM,  # T5's width
        caption_projection_dim=32,  # = heads x head dim
        pooled_projection_dim=32,  # the two CLIP projections, concatenated
        # SD 3.5 Medium: MMDiT-X (a second self-attention in the first layers) and RMS qk-norm
        **({"dual_attention_layers": (0,), "qk_norm": "rms_norm"} if sd35 else {}),
    )
    # SD3's VAE: 16 latent channels there (4 here), no quant convs, shift + scale.
    vae = kl_vae(4, use_quant_conv=False, use_post_quant_conv=False, shift_factor=0.0609, scaling_factor=1.5035)
    # Two CLIPs of width 16: their hidden states concatenated (32) are padded to T5's width
    # (32), as CLIP-L + CLIP-G (2048) are padded to T5-XXL's 4096.
    text_encoder = clip_text_encoder(16, with_projection=True)
    text_encoder_2 = clip_text_encoder(16, with_projection=True)
    tokenizer_3 = t5_tokenizer()
    text_encoder_3 = t5_encoder(len(tokenizer_3))
    pipe = StableDiffusion3Pipeline(
        transformer=transformer,
        scheduler=flow_scheduler(shift=3.0),
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=clip_tokenizer(),
        text_encoder_2=text_encoder_2,
        tokenizer_2=clip_tokenizer(),
        text_encoder_3=text_encoder_3,
        tokenizer_3=tokenizer_3,
    )
    pipe.save_pretrained(folder, safe_serialization=True)


def build_sd3(folder: Path) -> None:
    """StableDiffusion3Pipeline (SD3 Medium layout); 64 px by default."""
    _build_sd3(folder, sd35=False)


def build_sd35(folder: Path) -> None:
    """StableDiffusion3Pipeline with SD 3.5 Medium's transformer (``dual_attention_layers=(0,)``,
    ``qk_norm="rms_norm"``); 64 px by default."""
    _build_sd3(folder, sd35=True)


def _build_flux(folder: Path, *, guidance_embeds: bool) -> None:
    from diffusers import FluxPipeline, FluxTransformer2DModel

    torch.manual_seed(SEED)
    transformer = FluxTransformer2DModel(
        patch_size=1,
        in_channels=16,  # 4 latent channels packed 2x2
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=TEXT_DIM,  # T5's width
        pooled_projection_dim=32,  # CLIP's pooled output
        guidance_embeds=guidance_embeds,
        axes_dims_rope=(4, 6, 6),  # sums to attention_head_dim
    )
    vae = kl_vae(4, use_quant_conv=False, use_post_quant_conv=False, shift_factor=0.1159, scaling_factor=0.3611)
    tokenizer_2 = t5_tokenizer()
    pipe = FluxPipeline(
        transformer=transformer,
        # the checkpoints' schedulers: dev shifts with the resolution, schnell does not
        scheduler=flow_scheduler(
            shift=3.0, use_dynamic_shifting=True, base_shift=0.5, max_shift=1.15, base_image_seq_len=256,
            max_image_seq_len=4096,
        ) if guidance_embeds else flow_scheduler(shift=1.0),
        vae=vae,
        text_encoder=clip_text_encoder(32, with_projection=False),
        tokenizer=clip_tokenizer(),
        text_encoder_2=t5_encoder(len(tokenizer_2)),
        tokenizer_2=tokenizer_2,
    )
    pipe.save_pretrained(folder, safe_serialization=True)


def build_flux_schnell(folder: Path) -> None:
    """FluxPipeline without guidance embedding (FLUX.1 schnell: call with guidance_scale=0).
    FluxPipeline's default size is 128 latent x vae_scale_factor = 1024 px: pass height/width."""
    _build_flux(folder, guidance_embeds=False)


def build_flux_dev(folder: Path) -> None:
    """FluxPipeline with guidance embedding (FLUX.1 dev); 1024 px by default, as flux_schnell."""
    _build_flux(folder, guidance_embeds=True)


def _build_pixart(folder: Path, *, sigma: bool) -> None:
    from diffusers import DPMSolverMultistepScheduler, PixArtAlphaPipeline, PixArtSigmaPipeline
    from diffusers import PixArtTransformer2DModel

    torch.manual_seed(SEED)
    transformer = PixArtTransformer2DModel(
        # 32 is the smallest sample size PixArt's resolution binning (on by default) knows:
        # it generates at the nearest 256 px bin and resizes to the requested size.
        sample_size=32,
        num_layers=2,
        patch_size=2,
        attention_head_dim=16,
        num_attention_heads=2,
        caption_channels=TEXT_DIM,
        in_channels=4,
        cross_attention_dim=32,  # = heads x head dim
        out_channels=8,  # learned sigma, as in PixArt
        attention_bias=True,
        activation_fn="gelu-approximate",
        num_embeds_ada_norm=1000,
        norm_type="ada_norm_single",
        norm_elementwise_affine=False,
        norm_eps=1e-6,
    )
    vae = kl_vae(4)  # the SD VAE layout (quant convs, scale 0.18215)
    tokenizer = t5_tokenizer()
    cls = PixArtSigmaPipeline if sigma else PixArtAlphaPipeline
    pipe = cls(
        transformer=transformer,
        vae=vae,
        text_encoder=t5_encoder(len(tokenizer)),
        tokenizer=tokenizer,
        scheduler=DPMSolverMultistepScheduler(),  # the PixArt checkpoints' scheduler
    )
    pipe.save_pretrained(folder, safe_serialization=True)


def build_pixart_alpha(folder: Path) -> None:
    """PixArtAlphaPipeline; 256 px by default (32 latent x 8)."""
    _build_pixart(folder, sigma=False)


def build_pixart_sigma(folder: Path) -> None:
    """PixArtSigmaPipeline; 256 px by default (32 latent x 8)."""
    _build_pixart(folder, sigma=True)


def build_sana(folder: Path) -> None:
    """SanaPipeline (Gemma 2 text encoder, DC-AE); its call defaults to 1024 px."""
    from diffusers import SanaPipeline, SanaTransformer2DModel

    torch.manual_seed(SEED)
    transformer = SanaTransformer2DModel(
        # 16 is the smallest sample size Sana's resolution binning (on by default) knows: it
        # generates at the nearest 512 px bin (16 latent x 32) and resizes to the requested size.
        sample_size=16,
        patch_size=1,
        in_channels=4,
        out_channels=4,
        num_layers=1,
        num_attention_heads=2,
        attention_head_dim=16,
        num_cross_attention_heads=2,
        cross_attention_head_dim=16,
        cross_attention_dim=32,  # = heads x head dim
        caption_channels=TEXT_DIM,  # Gemma's width
    )
    vae = dc_ae()
    tokenizer = gemma_tokenizer()
    pipe = SanaPipeline(
        tokenizer=tokenizer,
        text_encoder=gemma_encoder(len(tokenizer)),
        vae=vae,
        transformer=transformer,
        scheduler=flow_scheduler(shift=3.0),
    )
    pipe.save_pretrained(folder, safe_serialization=True)


def build_kandinsky3(folder: Path) -> None:
    """Kandinsky3Pipeline (a UNet with a T5 text encoder and a MoVQ decoder); its call
    defaults to 1024 px."""
    from diffusers import DDPMScheduler, Kandinsky3Pipeline, Kandinsky3UNet, VQModel

    torch.manual_seed(SEED)
    unet = Kandinsky3UNet(
        in_channels=4,
        time_embedding_dim=4,
        groups=2,
        attention_head_dim=4,
        layers_per_block=2,  # 1 breaks Kandinsky3UNet's up blocks (a channel mismatch)
        block_out_channels=(16, 32),
        cross_attention_dim=4,
        encoder_hid_dim=TEXT_DIM,  # T5's width
    )
    torch.manual_seed(SEED)
    # Four blocks: the pipeline makes a height/8 latent whatever the decoder, so MoVQ must
    # upsample 8x (as the real one does) for the image to have the requested size.
    movq = VQModel(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4,
        block_out_channels=(32, 32, 32, 32),  # SpatialNorm's GroupNorm has 32 groups
        layers_per_block=1,
        latent_channels=4,
        num_vq_embeddings=64,
        norm_num_groups=8,
        norm_type="spatial",  # MoVQ's spatially conditioned norm
        vq_embed_dim=4,
        mid_block_add_attention=False,
    ).eval()
    scheduler = DDPMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        steps_offset=1,
        beta_schedule="squaredcos_cap_v2",
        clip_sample=True,
        thresholding=False,
    )
    tokenizer = t5_tokenizer()
    pipe = Kandinsky3Pipeline(
        tokenizer=tokenizer,
        text_encoder=t5_encoder(len(tokenizer)),
        unet=unet,
        scheduler=scheduler,
        movq=movq,
    )
    pipe.save_pretrained(folder, safe_serialization=True)


def build_lumina2(folder: Path) -> None:
    """Lumina2Pipeline (Gemma 2 text encoder, flow-matching DiT), laid out as the Hub's
    Alpha-VLLM/Lumina-Image-2.0: its model_index.json names the class by its old name,
    ``Lumina2Text2ImgPipeline``, which diffusers 0.42 no longer has. 64 px by default (8 latent x 8)."""
    import json

    from diffusers import Lumina2Pipeline, Lumina2Transformer2DModel

    torch.manual_seed(SEED)
    transformer = Lumina2Transformer2DModel(
        sample_size=8, patch_size=2, in_channels=4, hidden_size=16, num_layers=1, num_refiner_layers=1,
        num_attention_heads=2, num_kv_heads=1, multiple_of=16, axes_dim_rope=(4, 2, 2), axes_lens=(300, 64, 64),
        cap_feat_dim=TEXT_DIM,  # Gemma's width
    )
    vae = kl_vae(4, use_quant_conv=False, use_post_quant_conv=False, shift_factor=0.0609, scaling_factor=1.5035)
    tokenizer = gemma_tokenizer()
    pipe = Lumina2Pipeline(transformer=transformer, scheduler=flow_scheduler(), vae=vae,
                           text_encoder=gemma_encoder(len(tokenizer)), tokenizer=tokenizer)
    pipe.save_pretrained(folder, safe_serialization=True)
    index_path = Path(folder) / "model_index.json"
    index = json.loads(index_path.read_text(encoding="utf-8"))
    index_path.write_text(json.dumps({**index, "_class_name": "Lumina2Text2ImgPipeline"}, indent=2) + "\n",
                          encoding="utf-8")


#: key -> builder(folder) writing that family's pipeline folder
DIT_FAMILIES: dict[str, Callable[[Path], None]] = {
    "sd3": build_sd3,
    "sd35": build_sd35,
    "flux_schnell": build_flux_schnell,
    "flux_dev": build_flux_dev,
    "pixart_alpha": build_pixart_alpha,
    "pixart_sigma": build_pixart_sigma,
    "sana": build_sana,
    "kandinsky3": build_kandinsky3,
    "lumina2": build_lumina2,
}

