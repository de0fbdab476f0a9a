"""Tiny random-weight diffusers pipelines of the UNet-based text-to-image families.

For the tests and ``bench/gpu_check.sh``: each builder writes a real diffusers pipeline
folder (``save_pretrained(..., safe_serialization=True)``) of the family's pipeline class,
schedulers and component layout, with models small enough to build in about a second and
to generate 2-step images on a CPU. The weights are random, so the images are
meaningless; what these folders check is that the benchmark's loaders, call arguments
and output handling work for each family.

Configurations follow diffusers' own fast tests (``get_dummy_components``). Nothing is
downloaded: tokenizers are the real CLIP BPE tokenizer built offline from open_clip's
vocabulary (:func:`benchmark.models.clip_tokenizer.build_clip_tokenizer`), so every text
encoder has CLIP's 49,408-token vocabulary and 77 positions.

API::

    UNET_FAMILIES: dict[str, Callable[[Path], None]]   # key -> builder(folder); tiny_pipelines.build_family(key, folder) calls it

The builders' docstrings give each key's pipeline class; :data:`CALL_ARGUMENTS` the
arguments a 2-step call needs, :data:`IMAGE_SIZES` the size of its images.

Loading: ``AutoPipelineForText2Image.from_pretrained(folder)`` maps every key but
``unclip`` (use ``DiffusionPipeline.from_pretrained``). ``kandinsky22_decoder`` is loaded by
AutoPipeline as KandinskyV22CombinedPipeline through its README's ``prior:`` link, as the
Hub's kandinsky-2-2-decoder is. The folders in :data:`DEPRECATED_LIBRARIES` name components
by their pipeline module (``["wuerstchen", "PaellaVQModel"]``) as their Hub models do; a
diffusers that moved those modules to ``diffusers.pipelines.deprecated`` without resolving the
old names (0.42.1) fails to load them, and the Hub's models,
with "wuerstchen is not one of the libraries Diffusers can load components from": aliasing
``diffusers.pipelines.<name>`` to ``diffusers.pipelines.deprecated.<name>`` before loading
works around it.
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

from benchmark.models.clip_tokenizer import build_clip_tokenizer
from benchmark.models.tiny_sd import TINY_SD_SCHEDULER, TINY_SD_TEXT, TINY_SD_UNET, TINY_SD_VAE

__all__ = [
    "UNET_FAMILIES",
    "CALL_ARGUMENTS",
    "IMAGE_SIZES",
    "DEPRECATED_LIBRARIES",
    "build_kandinsky22_prior",
]

SEED = 0
# Hidden size of every text / image encoder (and so of the CLIP image embeddings).
HIDDEN = 32

#: per key, the arguments a 2-step call needs besides prompt / generator / output_type
#: (the pipelines' own defaults are sized for the real models: 512-1024 px, 25-100 steps).
CALL_ARGUMENTS: dict[str, dict] = {
    "sd15": {"num_inference_steps": 2},
    "sd2": {"num_inference_steps": 2},
    "sdxl": {"num_inference_steps": 2},
    "playground": {"num_inference_steps": 2},
    "lcm": {"num_inference_steps": 2},
    "kandinsky22": {"num_inference_steps": 2, "prior_num_inference_steps": 2, "height": 64, "width": 64},
    "kandinsky22_decoder": {"num_inference_steps": 2, "prior_num_inference_steps": 2, "height": 64, "width": 64},
    "unclip": {"prior_num_inference_steps": 2, "decoder_num_inference_steps": 2, "super_res_num_inference_steps": 2},
    "wuerstchen": {"num_inference_steps": 2, "prior_num_inference_steps": 2, "height": 128, "width": 128},
    "stable_cascade": {"num_inference_steps": 2, "prior_num_inference_steps": 2, "height": 128, "width": 128},
}

#: per key, the (width, height) of the images a call with CALL_ARGUMENTS returns
IMAGE_SIZES: dict[str, tuple[int, int]] = {
    "sd15": (64, 64),
    "sd2": (64, 64),
    "sdxl": (64, 64),
    "playground": (64, 64),
    "lcm": (64, 64),
    "kandinsky22": (64, 64),
    "kandinsky22_decoder": (64, 64),
    "unclip": (64, 64),
    "wuerstchen": (128, 128),
    "stable_cascade": (128, 128),
}


#: per key, the library names its model_index.json uses that are modules moved to
#: ``diffusers.pipelines.deprecated`` (see the module docstring)
DEPRECATED_LIBRARIES: dict[str, tuple[str, ...]] = {
    "unclip": ("unclip",),
    "wuerstchen": ("wuerstchen",),
    "stable_cascade": ("wuerstchen",),
}


# ------------------------------------------------------------------------ components


@functools.lru_cache(maxsize=1)
def _tokenizer():
    """The offline CLIP tokenizer (pad = ``<|endoftext|>``), built once per process: building
    it takes about a second, and the builders only save it, never change it."""
    with tempfile.TemporaryDirectory() as tmp:
        return build_clip_tokenizer(tmp)


def _text_config(**overrides):
    from transformers import CLIPTextConfig

    return CLIPTextConfig(**{**TINY_SD_TEXT, "hidden_size": HIDDEN, "projection_dim": HIDDEN, **overrides})

def _text_encoder(with_projection: bool = False):
    from transformers import CLIPTextModel, CLIPTextModelWithProjection

    torch.manual_seed(SEED)
    cls = CLIPTextModelWithProjection if with_projection else CLIPTextModel
    return cls(_text_config()).eval()


def _image_encoder():
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    torch.manual_seed(SEED)
    config = CLIPVisionConfig(
        hidden_size=HIDDEN,
        intermediate_size=64,
        num_attention_heads=4,
        num_hidden_layers=2,
        image_size=32,  # the Kandinsky prior encodes a zero image of this size as the negative
        patch_size=8,
        num_channels=3,
        projection_dim=HIDDEN,
    )
    return CLIPVisionModelWithProjection(config).eval()


def _image_processor():
    from transformers import CLIPImageProcessor

    # OpenAI CLIP's preprocessing, at the tiny image encoder's 32 px.
    return CLIPImageProcessor(
        crop_size=32,
        size=32,
        do_center_crop=True,
        do_normalize=True,
        do_resize=True,
        image_mean=[0.48145466, 0.4578275, 0.40821073],
        image_std=[0.26862954, 0.26130258, 0.27577711],
        resample=3,
    )


def _vae(**overrides):
    from diffusers import AutoencoderKL

    torch.manual_seed(SEED)
    # Two blocks: vae_scale_factor 2, so a 32 latent decodes to 64 px.
    return AutoencoderKL(**{**TINY_SD_VAE, **overrides})

def _sd_unet(**overrides):
    from diffusers import UNet2DConditionModel

    torch.manual_seed(SEED)
    # latent size 32; x vae_scale_factor 2 = 64 px (the pipeline's default size)
    return UNet2DConditionModel(**{**TINY_SD_UNET, "cross_attention_dim": HIDDEN, **overrides})

def _save(pipe, folder: Path) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pipe.save_pretrained(folder, safe_serialization=True)
    _hub_library_names(pipe, folder)
    return folder


def _hub_library_names(pipe, folder: Path) -> None:
    """Name a component's library as the Hub's folders do.

    Components defined in a pipeline's own module (UnCLIPTextProjModel, PaellaVQModel,
    WuerstchenPrior, WuerstchenDiffNeXt) are listed in the Hub's model_index.json under that
    pipeline's name (``["unclip", "UnCLIPTextProjModel"]``, ``["wuerstchen", "PaellaVQModel"]``).
    diffusers has since moved those pipelines to ``diffusers.pipelines.deprecated``, and its
    save_pretrained now writes ``["diffusers", ...]``, which no loader resolves. Writing the
    Hub's names keeps these folders loading exactly as warp-ai/wuerstchen,
    stabilityai/stable-cascade or kakaobrain/karlo-v1-alpha do (including their failure in a
    diffusers that cannot resolve them).
    """
    index_path = folder / "model_index.json"
    index = json.loads(index_path.read_text(encoding="utf-8"))
    changed = False
    for name, component in pipe.components.items():
        module = type(component).__module__.split(".")
        if module[:3] == ["diffusers", "pipelines", "deprecated"] and len(module) > 4:
            index[name] = [module[3], type(component).__name__]
            changed = True
    if changed:
        index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# ------------------------------------------------------------ Stable Diffusion 1 / 2


def _sd(folder: Path, *, v_prediction: bool) -> None:
    from diffusers import DDIMScheduler, StableDiffusionPipeline

    unet = _sd_unet(use_linear_projection=True) if v_prediction else _sd_unet()
    vae = _vae()
    text_encoder = _text_encoder()
    # The Hub's SD 1.5 / SD 2.1 scheduler settings (DDIM instead of SD 1.5's PNDM: fewer
    # quirks at 2 steps); SD 2.1 (768-v) predicts v.
    scheduler = DDIMScheduler(**TINY_SD_SCHEDULER, prediction_type="v_prediction" if v_prediction else "epsilon")
    pipe = StableDiffusionPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=_tokenizer(),
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    _save(pipe, folder)


def build_sd15(folder: Path) -> None:
    """``sd15``: StableDiffusionPipeline, DDIM epsilon-prediction, CLIPTextModel; 64 px."""
    _sd(folder, v_prediction=False)


def build_sd2(folder: Path) -> None:
    """``sd2``: StableDiffusionPipeline as SD 2.1 768-v (v-prediction DDIM, linear-projection
    attention); 64 px. The text encoder is tiny (hidden 32), so code that tells SD 2 by a
    1024-wide text encoder sees SD 1."""
    _sd(folder, v_prediction=True)


# ------------------------------------------------------------------- SDXL family


def _sdxl(folder: Path, *, playground: bool) -> None:
    from diffusers import EDMDPMSolverMultistepScheduler, EulerDiscreteScheduler, StableDiffusionXLPipeline

    unet = _sd_unet(
        block_out_channels=(32, 64),
        attention_head_dim=(2, 4),
        use_linear_projection=True,
        # SDXL's micro-conditioning: 6 time ids x 8 + the 32-wide pooled text embedding = 80
        addition_embed_type="text_time",
        addition_time_embed_dim=8,
        transformer_layers_per_block=(1, 2),
        projection_class_embeddings_input_dim=6 * 8 + HIDDEN,
        cross_attention_dim=2 * HIDDEN,  # both encoders' hidden states, concatenated
    )
    if playground:
        # Playground v2.5's VAE: latents are normalised with per-channel mean / std.
        vae = _vae(
            block_out_channels=(32, 64),
            scaling_factor=0.5,
            latents_mean=[-1.6574, 1.886, -1.383, 2.5155],
            latents_std=[8.4927, 5.9022, 6.5498, 5.2299],
        )
        scheduler = EDMDPMSolverMultistepScheduler(
            sigma_min=0.002,
            sigma_max=80.0,
            sigma_data=0.5,
            num_train_timesteps=1000,
            prediction_type="epsilon",
            rho=7.0,
            solver_order=2,
            algorithm_type="dpmsolver++",
            solver_type="midpoint",
            lower_order_final=True,
            final_sigmas_type="zero",
        )
    else:
        vae = _vae(block_out_channels=(32, 64), scaling_factor=0.13025)
        scheduler = EulerDiscreteScheduler(
            beta_start=0.00085,
            beta_end=0.012,
            beta_schedule="scaled_linear",
            steps_offset=1,
            timestep_spacing="leading",
            prediction_type="epsilon",
        )
    pipe = StableDiffusionXLPipeline(
        vae=vae,
        text_encoder=_text_encoder(),
        text_encoder_2=_text_encoder(with_projection=True),
        tokenizer=_tokenizer(),
        tokenizer_2=_tokenizer(),
        unet=unet,
        scheduler=scheduler,
        force_zeros_for_empty_prompt=True,
        add_watermarker=False,  # the watermark only applies >= 256 px; keep the optional package out
    )
    _save(pipe, folder)


def build_sdxl(folder: Path) -> None:
    """``sdxl``: StableDiffusionXLPipeline (CLIPTextModel + CLIPTextModelWithProjection,
    EulerDiscreteScheduler, ``text_time`` micro-conditioning); 64 px."""
    _sdxl(folder, playground=False)


def build_playground(folder: Path) -> None:
    """``playground``: StableDiffusionXLPipeline as Playground v2.5 (EDMDPMSolverMultistepScheduler,
    VAE with ``latents_mean`` / ``latents_std``); 64 px."""
    _sdxl(folder, playground=True)


# --------------------------------------------------------------------------- LCM


def build_lcm(folder: Path) -> None:
    """``lcm``: LatentConsistencyModelPipeline (LCMScheduler, UNet with ``time_cond_proj_dim``:
    the guidance scale is embedded, not applied as classifier-free guidance); 64 px."""
    from diffusers import LatentConsistencyModelPipeline, LCMScheduler

    unet = _sd_unet(time_cond_proj_dim=HIDDEN)
    scheduler = LCMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=True,
        steps_offset=1,
        original_inference_steps=50,
        timestep_spacing="leading",
        prediction_type="epsilon",
    )
    pipe = LatentConsistencyModelPipeline(
        vae=_vae(),
        text_encoder=_text_encoder(),
        tokenizer=_tokenizer(),
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    _save(pipe, folder)


# -------------------------------------------------------------------- Kandinsky 2.2


def _prior_transformer():
    from diffusers import PriorTransformer

    torch.manual_seed(SEED)
    # num_embeddings defaults to 77 = the tokenizer's length; embedding_dim = the CLIP width.
    prior = PriorTransformer(num_attention_heads=2, attention_head_dim=12, embedding_dim=HIDDEN, num_layers=1)
    # clip_std starts at 0, which would make every image embedding 0 (post_process_latents).
    prior.clip_std = torch.nn.Parameter(torch.ones(prior.clip_std.shape))
    return prior


def _kandinsky_prior_components() -> dict:
    from diffusers import UnCLIPScheduler

    # The Hub's kandinsky-2-2-prior scheduler.
    scheduler = UnCLIPScheduler(
        variance_type="fixed_small_log",
        prediction_type="sample",
        num_train_timesteps=1000,
        clip_sample=True,
        clip_sample_range=10.0,
    )
    return {
        "prior": _prior_transformer(),
        "image_encoder": _image_encoder(),
        "text_encoder": _text_encoder(with_projection=True),
        "tokenizer": _tokenizer(),
        "scheduler": scheduler,
        "image_processor": _image_processor(),
    }


def _kandinsky_decoder_components() -> dict:
    from diffusers import DDPMScheduler, UNet2DConditionModel, VQModel

    torch.manual_seed(SEED)
    unet = UNet2DConditionModel(
        in_channels=4,
        out_channels=8,  # mean and variance ("learned_range")
        addition_embed_type="image",
        down_block_types=("ResnetDownsampleBlock2D", "SimpleCrossAttnDownBlock2D"),
        up_block_types=("SimpleCrossAttnUpBlock2D", "ResnetUpsampleBlock2D"),
        mid_block_type="UNetMidBlock2DSimpleCrossAttn",
        block_out_channels=(32, 64),
        layers_per_block=1,
        encoder_hid_dim=HIDDEN,  # the CLIP image embedding the prior produces
        encoder_hid_dim_type="image_proj",
        cross_attention_dim=HIDDEN,
        attention_head_dim=4,
        resnet_time_scale_shift="scale_shift",
        class_embed_type=None,
    )
    torch.manual_seed(SEED)
    # Two blocks: movq_scale_factor 2; the pipeline maps 64 px to a 32 latent.
    movq = VQModel(
        block_out_channels=(32, 64),
        down_block_types=("DownEncoderBlock2D", "AttnDownEncoderBlock2D"),
        up_block_types=("AttnUpDecoderBlock2D", "UpDecoderBlock2D"),
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        layers_per_block=1,
        norm_num_groups=8,
        norm_type="spatial",
        num_vq_embeddings=12,
        vq_embed_dim=4,
    )
    # The Hub's kandinsky-2-2-decoder scheduler.
    scheduler = DDPMScheduler(
        num_train_timesteps=1000,
        beta_schedule="linear",
        beta_start=0.00085,
        beta_end=0.012,
        clip_sample=False,
        steps_offset=1,
        prediction_type="epsilon",
        variance_type="learned_range",
    )
    return {"unet": unet, "scheduler": scheduler, "movq": movq}


def build_kandinsky22(folder: Path) -> None:
    """``kandinsky22``: KandinskyV22CombinedPipeline (prior: PriorTransformer, CLIP text and
    vision encoders with projection, UnCLIPScheduler; decoder: image-conditioned UNet, VQModel
    movq, DDPMScheduler) in one folder. Call with ``height=64, width=64`` (defaults: 512)."""
    from diffusers import KandinskyV22CombinedPipeline

    prior = _kandinsky_prior_components()
    pipe = KandinskyV22CombinedPipeline(
        **_kandinsky_decoder_components(), **{f"prior_{name}": part for name, part in prior.items()}
    )
    _save(pipe, folder)


def build_kandinsky22_prior(folder: Path) -> Path:
    """KandinskyV22PriorPipeline alone (the Hub's kandinsky-2-2-prior layout); returns ``folder``."""
    from diffusers import KandinskyV22PriorPipeline

    return _save(KandinskyV22PriorPipeline(**_kandinsky_prior_components()), folder)


def build_kandinsky22_decoder(folder: Path) -> None:
    """``kandinsky22_decoder``: KandinskyV22Pipeline (decoder only), laid out as the Hub's
    kandinsky-2-2-decoder, plus its prior (KandinskyV22PriorPipeline) in the sibling folder
    ``folder.parent / (folder.name + "-prior")``.

    As on the Hub, the decoder's README.md names its prior in the model card's ``prior:``
    list, so ``AutoPipelineForText2Image.from_pretrained(folder)`` loads
    KandinskyV22CombinedPipeline with that prior. The README holds the prior's absolute path:
    move the two folders together and rebuild (or rewrite README.md) after moving them.
    Call with ``height=64, width=64`` (defaults: 512).
    """
    from diffusers import KandinskyV22Pipeline

    folder = Path(folder)
    prior_folder = build_kandinsky22_prior(folder.parent / (folder.name + "-prior"))
    _save(KandinskyV22Pipeline(**_kandinsky_decoder_components()), folder)
    # diffusers reads the connected pipelines from the model card's metadata (CONNECTED_PIPES_KEYS).
    (folder / "README.md").write_text(
        "---\nprior:\n- " + json.dumps(str(prior_folder.resolve())) + "\n---\n\n"
        "Tiny random-weight Kandinsky 2.2 decoder for tests: its images are meaningless.\n",
        encoding="utf-8",
    )


# ------------------------------------------------------------------ unCLIP (Karlo)


def build_unclip(folder: Path) -> None:
    """``unclip``: UnCLIPPipeline as Karlo (PriorTransformer prior, UnCLIPTextProjModel,
    UNet2DConditionModel decoder at 32 px, two UNet2DModel super-resolution stages to 64 px,
    three UnCLIPSchedulers). Its size is fixed by the models (no height / width); its step
    arguments are ``prior_`` / ``decoder_`` / ``super_res_num_inference_steps``. Not mapped by
    AutoPipelineForText2Image: load with ``DiffusionPipeline.from_pretrained``."""
    from diffusers import UnCLIPPipeline, UnCLIPScheduler, UNet2DConditionModel, UNet2DModel
    from diffusers.pipelines.deprecated.unclip.text_proj import UnCLIPTextProjModel

    time_embed_dim = 4 * 32  # 4 x the decoder's first block width
    torch.manual_seed(SEED)
    text_proj = UnCLIPTextProjModel(
        clip_embeddings_dim=HIDDEN, time_embed_dim=time_embed_dim, cross_attention_dim=HIDDEN
    )
    torch.manual_seed(SEED)
    decoder = UNet2DConditionModel(
        sample_size=32,
        in_channels=3,  # pixels, no VAE
        out_channels=6,  # mean and variance ("learned_range")
        down_block_types=("ResnetDownsampleBlock2D", "SimpleCrossAttnDownBlock2D"),
        up_block_types=("SimpleCrossAttnUpBlock2D", "ResnetUpsampleBlock2D"),
        mid_block_type="UNetMidBlock2DSimpleCrossAttn",
        block_out_channels=(32, 64),
        layers_per_block=1,
        cross_attention_dim=HIDDEN,
        attention_head_dim=4,
        resnet_time_scale_shift="scale_shift",
        class_embed_type="identity",  # text_proj adds the image embedding to the time embedding
    )
    super_res = dict(
        sample_size=64,
        layers_per_block=1,
        down_block_types=("ResnetDownsampleBlock2D", "ResnetDownsampleBlock2D"),
        up_block_types=("ResnetUpsampleBlock2D", "ResnetUpsampleBlock2D"),
        block_out_channels=(32, 64),
        in_channels=6,  # noisy image + upsampled low-resolution image
        out_channels=3,
    )
    torch.manual_seed(SEED)
    super_res_first = UNet2DModel(**super_res)
    torch.manual_seed(SEED + 1)  # a different model from super_res_first
    super_res_last = UNet2DModel(**super_res)
    # Karlo's three schedulers.
    pipe = UnCLIPPipeline(
        prior=_prior_transformer(),
        decoder=decoder,
        text_proj=text_proj,
        text_encoder=_text_encoder(with_projection=True),
        tokenizer=_tokenizer(),
        super_res_first=super_res_first,
        super_res_last=super_res_last,
        prior_scheduler=UnCLIPScheduler(
            variance_type="fixed_small_log", prediction_type="sample", num_train_timesteps=1000,
            clip_sample_range=5.0,
        ),
        decoder_scheduler=UnCLIPScheduler(
            variance_type="learned_range", prediction_type="epsilon", num_train_timesteps=1000
        ),
        super_res_scheduler=UnCLIPScheduler(
            variance_type="fixed_small_log", prediction_type="epsilon", num_train_timesteps=1000
        ),
    )
    _save(pipe, folder)


# ------------------------------------------------------------- Wuerstchen / Cascade


def _paella_vq():
    from diffusers.pipelines.deprecated.wuerstchen import PaellaVQModel

    torch.manual_seed(SEED)
    # The default widths (the real model's) with one bottleneck block and 2 codes; a 4x
    # up-scaling: a 32 latent decodes to 128 px.
    return PaellaVQModel(bottleneck_blocks=1, num_vq_embeddings=2).eval()


def build_wuerstchen(folder: Path) -> None:
    """``wuerstchen``: WuerstchenCombinedPipeline (WuerstchenPrior, WuerstchenDiffNeXt decoder,
    PaellaVQModel, CLIPTextModel x2, DDPMWuerstchenScheduler). Call with ``height=128,
    width=128`` (defaults: 1024); the prior's steps are ``prior_num_inference_steps``."""
    from diffusers import DDPMWuerstchenScheduler, WuerstchenCombinedPipeline
    from diffusers.pipelines.deprecated.wuerstchen import WuerstchenDiffNeXt, WuerstchenPrior

    torch.manual_seed(SEED)
    prior = WuerstchenPrior(c_in=2, c=8, depth=2, c_cond=HIDDEN, c_r=8, nhead=2).eval()
    torch.manual_seed(SEED)
    decoder = WuerstchenDiffNeXt(
        c_cond=HIDDEN,
        c_hidden=[32],
        nhead=[-1],  # no attention in the single level
        blocks=[2],
        level_config=["CT"],
        clip_embd=HIDDEN,
        inject_effnet=[False],
        effnet_embd=2,  # = the prior's c_in: the prior's latents condition the decoder
    ).eval()
    pipe = WuerstchenCombinedPipeline(
        tokenizer=_tokenizer(),
        text_encoder=_text_encoder(),
        decoder=decoder,
        scheduler=DDPMWuerstchenScheduler(),
        vqgan=_paella_vq(),
        prior_tokenizer=_tokenizer(),
        prior_text_encoder=_text_encoder(),
        prior_prior=prior,
        prior_scheduler=DDPMWuerstchenScheduler(),
    )
    _save(pipe, folder)


def build_stable_cascade(folder: Path) -> None:
    """``stable_cascade``: StableCascadeCombinedPipeline (StableCascadeUNet prior and decoder,
    PaellaVQModel, CLIPTextModelWithProjection x2, DDPMWuerstchenScheduler; no image encoder).
    Call with ``height=128, width=128`` (defaults: 1024); the prior's steps are
    ``prior_num_inference_steps``."""
    from diffusers import DDPMWuerstchenScheduler, StableCascadeCombinedPipeline
    from diffusers.models import StableCascadeUNet

    torch.manual_seed(SEED)
    prior = StableCascadeUNet(
        in_channels=16,
        out_channels=16,
        conditioning_dim=64,
        block_out_channels=(64, 64),
        num_attention_heads=(2, 2),
        down_num_layers_per_block=(1, 1),
        up_num_layers_per_block=(1, 1),
        clip_image_in_channels=HIDDEN,  # zero image embeddings of this width when no image is given
        switch_level=(False,),
        clip_text_in_channels=HIDDEN,
        clip_text_pooled_in_channels=HIDDEN,
    ).eval()
    torch.manual_seed(SEED)
    decoder = StableCascadeUNet(
        in_channels=4,
        out_channels=4,
        conditioning_dim=64,
        block_out_channels=(16, 32, 64),
        num_attention_heads=(-1, 1, 2),
        down_num_layers_per_block=(1, 1, 1),
        up_num_layers_per_block=(1, 1, 1),
        down_blocks_repeat_mappers=(1, 1, 1),
        up_blocks_repeat_mappers=(1, 1, 1),
        block_types_per_layer=(
            ("SDCascadeResBlock", "SDCascadeTimestepBlock"),
            ("SDCascadeResBlock", "SDCascadeTimestepBlock", "SDCascadeAttnBlock"),
            ("SDCascadeResBlock", "SDCascadeTimestepBlock", "SDCascadeAttnBlock"),
        ),
        switch_level=None,
        effnet_in_channels=16,  # = the prior's out_channels
        clip_text_pooled_in_channels=HIDDEN,
        dropout=(0.0, 0.0, 0.0),
    ).eval()
    pipe = StableCascadeCombinedPipeline(
        tokenizer=_tokenizer(),
        text_encoder=_text_encoder(with_projection=True),
        decoder=decoder,
        scheduler=DDPMWuerstchenScheduler(),
        vqgan=_paella_vq(),
        prior_prior=prior,
        prior_text_encoder=_text_encoder(with_projection=True),
        prior_tokenizer=_tokenizer(),
        prior_scheduler=DDPMWuerstchenScheduler(),
        prior_feature_extractor=None,
        prior_image_encoder=None,
    )
    _save(pipe, folder)


# --------------------------------------------------------------------------- API

#: key -> builder(folder): writes the pipeline folder (and, for kandinsky22_decoder, its prior)
UNET_FAMILIES: dict[str, Callable[[Path], None]] = {
    "sd15": build_sd15,
    "sd2": build_sd2,
    "sdxl": build_sdxl,
    "playground": build_playground,
    "lcm": build_lcm,
    "kandinsky22": build_kandinsky22,
    "kandinsky22_decoder": build_kandinsky22_decoder,
    "unclip": build_unclip,
    "wuerstchen": build_wuerstchen,
    "stable_cascade": build_stable_cascade,
}

