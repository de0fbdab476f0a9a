"""Tiny random-weight diffusers pipelines of the families diffusers added from 2024 on, whose
text encoders are language models: Qwen-Image, Z-Image, HiDream-I1, CogView3-Plus, CogView4,
AuraFlow, SANA-Sprint and Kolors.

For the tests and ``bench/gpu_check.sh``, as ``tiny_pipelines_dit.py``: each builder writes a
real diffusers pipeline folder of the family's pipeline class, scheduler and component layout,
with models small enough to build in about a second and to generate 2-step 64 px images on a
CPU; the weights are random and the images meaningless. Configurations follow diffusers' own
fast tests (``get_dummy_components``), which download their tokenizers and some text encoders
from hf-internal-testing; here nothing is downloaded:

* the byte-level BPE tokenizers of Qwen 2.5 / Qwen 3 (Qwen2Tokenizer), Llama 3.1 and GLM-4
  (PreTrainedTokenizerFast) are trained here with the ``tokenizers`` library over the same
  words as the T5 / Gemma tokenizers of ``tiny_pipelines_dit.py`` (each word one token, any
  other text in bytes), with the specials each pipeline uses. Qwen-Image drops the first 34
  tokens of its prompt template (the system prompt as Qwen's tokenizer splits it): the tiny
  tokenizer splits it into the same 34 (checked when it is built);
* Kolors' ChatGLM tokenizer is SentencePiece (a ``tokenizer.model`` file): a small BPE model is
  trained here with ``sentencepiece``'s own trainer, then loaded by diffusers' ChatGLMTokenizer;
* every text encoder is its transformers (or, for Kolors' ChatGLM, diffusers') class built from
  a tiny config: Qwen2.5-VL (with a 2-block vision tower, unused for text), Qwen 3, Llama, GLM,
  UMT5, T5, CLIP, Gemma 2, ChatGLM.

API::

    RECENT_FAMILIES: dict[str, Callable[[Path], None]]   # key -> builder(folder)

:data:`CALL_ARGUMENTS` holds, per key, the arguments of a quick 2-step call and
:data:`IMAGE_SIZES` the (width, height) of the images it returns.
"""

from __future__ import annotations

import functools
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

import tiny_pipelines_dit as dit

__all__ = ["RECENT_FAMILIES", "CALL_ARGUMENTS", "IMAGE_SIZES", "QWEN_IMAGE_TEMPLATE_TOKENS"]

SEED = 0
#: width of every language-model text encoder here
TEXT_DIM = 16

CALL_ARGUMENTS: dict[str, dict] = {
    key: {"num_inference_steps": 2, "height": 64, "width": 64}
    for key in ("qwen_image", "z_image", "cogview3plus", "cogview4", "auraflow", "sana_sprint", "kolors")
}
#: HiDream generates at its native area whatever the size asked (pipeline_hidream_image.py): 128 px here
CALL_ARGUMENTS["hidream"] = {"num_inference_steps": 2, "height": 128, "width": 128}
#: SANA-Sprint's resolution binning knows only the 1024 px bins: the tiny DC-AE would decode 1024 px
#: images (a second each on a CPU) to resize them to 64 (tiny Sana checks binning, at 512 px)
CALL_ARGUMENTS["sana_sprint"] = {**CALL_ARGUMENTS["sana_sprint"], "use_resolution_binning": False}
IMAGE_SIZES: dict[str, tuple[int, int]] = {key: (call["width"], call["height"]) for key, call in CALL_ARGUMENTS.items()}

#: QwenImagePipeline.prompt_template_encode_start_idx: the tokens of its template's system part
QWEN_IMAGE_TEMPLATE_TOKENS = 34
#: the words of the prompt templates the pipelines wrap a prompt in (Qwen-Image's system prompt,
#: the chat roles), so that they tokenize as Qwen's own tokenizer does: one token a word
TEMPLATE_WORDS = ("system Describe image detailing color shape size texture quantity text spatial relationships "
                  "objects background user assistant").split()


# ------------------------------------------------------------------------ tokenizers


@functools.lru_cache(maxsize=1)
def _byte_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """(vocab, merges) of a byte-level BPE trained over the tokenizers' words, each word with and
    without a leading space, split as Qwen 2 / Llama 3 split text (their regex, then bytes)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    words = list(dict.fromkeys(dit.WORDS + TEMPLATE_WORDS))
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=100_000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    bpe.train_from_iterator(words + [" " + w for w in words], trainer=trainer)
    model = json.loads(bpe.to_str())["model"]
    return dict(model["vocab"]), [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]


#: Qwen 3's chat template, reduced to what Z-Image uses (a user turn and the generation prompt)
QWEN_CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                      "{% if add_generation_prompt %}<|im_start|>assistant\n"
                      "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}"
                      "{% endif %}")


def qwen_tokenizer():
    """Qwen2Tokenizer (Qwen 2.5 / Qwen 3) over the trained byte-level BPE, pad = ``<|endoftext|>``,
    with the chat specials and the vision specials Qwen2.5-VL's config names."""
    from transformers import Qwen2Tokenizer

    vocab, merges = _byte_bpe()
    vocab = {**vocab, "<|endoftext|>": len(vocab)}
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=merges, model_max_length=32768, chat_template=QWEN_CHAT_TEMPLATE)
    tokenizer.add_special_tokens({"additional_special_tokens": [
        "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"]})
    return tokenizer


def fast_bpe_tokenizer(*, prefix: tuple[str, ...], eos: str, pad: str):
    """A PreTrainedTokenizerFast over the trained byte-level BPE that starts every text with the
    special tokens ``prefix``: Llama 3.1's layout (``<|begin_of_text|>``, HiDream's fourth
    tokenizer) or GLM-4's (``[gMASK]<sop>``, CogView4's: its empty negative prompt is these two)."""
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    backend = qwen_tokenizer().backend_tokenizer
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=131072)
    tokenizer.add_special_tokens({"bos_token": prefix[0], "eos_token": eos, "pad_token": pad,
                                  "additional_special_tokens": list(prefix[1:])})
    start = " ".join(prefix)
    tokenizer.backend_tokenizer.post_processor = TemplateProcessing(
        single=f"{start} $A", pair=f"{start} $A $B", special_tokens=[(t, tokenizer.convert_tokens_to_ids(t)) for t in prefix])
    return tokenizer


def chatglm_tokenizer(folder: Path):
    """diffusers' ChatGLMTokenizer (Kolors) over a 600-piece SentencePiece BPE model trained here
    (byte fallback, so any text encodes); written to ``folder/tokenizer.model`` first."""
    import sentencepiece
    from diffusers.pipelines.kolors.tokenizer import ChatGLMTokenizer

    words = dit.WORDS + TEMPLATE_WORDS
    lines = [" ".join(words[i:i + 12]) for i in range(0, len(words), 12)] + [" ".join(dit.CHARS)]
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=600, model_type="bpe", byte_fallback=True,
        character_coverage=1.0, hard_vocab_limit=False, unk_id=0, bos_id=1, eos_id=2, minloglevel=2)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.model").write_bytes(model.getvalue())
    return ChatGLMTokenizer(vocab_file=str(folder / "tokenizer.model"))


# ------------------------------------------------------------------------ text encoders


def _qwen25_vl(vocab_size: int, tokenizer):
    """Qwen2.5-VL (Qwen-Image's text encoder), as diffusers' fast test builds it, its vocabulary
    the tiny tokenizer's."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    torch.manual_seed(SEED)
    ids = tokenizer.convert_tokens_to_ids
    config = Qwen2_5_VLConfig(
        text_config={"hidden_size": TEXT_DIM, "intermediate_size": 32, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": vocab_size,
                     "rope_scaling": {"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"},
                     "rope_theta": 1000000.0, "bos_token_id": ids("<|endoftext|>"),
                     "eos_token_id": ids("<|im_end|>"), "pad_token_id": ids("<|endoftext|>")},
        vision_config={"depth": 1, "hidden_size": 16, "intermediate_size": 16, "num_heads": 2,
                       "out_hidden_size": TEXT_DIM},
        hidden_size=TEXT_DIM, vocab_size=vocab_size, vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"), vision_token_id=ids("<|image_pad|>"),
        image_token_id=ids("<|image_pad|>"),
    )
    return Qwen2_5_VLForConditionalGeneration(config).eval()


def _decoder_config(cls_name: str, vocab_size: int, layers: int, **extra):
    """A tiny decoder-only language model config (Qwen 3, Llama, GLM): TEXT_DIM wide, 2 heads."""
    import transformers

    return getattr(transformers, cls_name)(
        vocab_size=vocab_size, hidden_size=TEXT_DIM, intermediate_size=32, num_hidden_layers=layers,
        num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=4096, **extra)


# ------------------------------------------------------------------------ families


def build_qwen_image(folder: Path) -> None:
    """QwenImagePipeline (Qwen2.5-VL text encoder, a Wan-style causal 3D VAE); true CFG with
    ``true_cfg_scale`` only when a negative prompt is given."""
    from diffusers import AutoencoderKLQwenImage, QwenImagePipeline, QwenImageTransformer2DModel

    tokenizer = qwen_tokenizer()
    torch.manual_seed(SEED)
    transformer = QwenImageTransformer2DModel(
        patch_size=2, in_channels=16, out_channels=4, num_layers=1, attention_head_dim=16, num_attention_heads=2,
        joint_attention_dim=TEXT_DIM, guidance_embeds=False, axes_dims_rope=(8, 4, 4))
    torch.manual_seed(SEED)
    vae = AutoencoderKLQwenImage(base_dim=8, z_dim=4, dim_mult=[1, 1, 1], num_res_blocks=1,
                                 temperal_downsample=[False, True], latents_mean=[0.0] * 4, latents_std=[1.0] * 4)
    pipe = QwenImagePipeline(transformer=transformer, vae=vae, scheduler=dit.flow_scheduler(),
                             text_encoder=_qwen25_vl(len(tokenizer), tokenizer), tokenizer=tokenizer)
    system = pipe.prompt_template_encode.split("{}")[0]
    n = len(tokenizer(system).input_ids)
    assert n == pipe.prompt_template_encode_start_idx == QWEN_IMAGE_TEMPLATE_TOKENS, n
    pipe.save_pretrained(folder, safe_serialization=True)


def build_z_image(folder: Path) -> None:
    """ZImagePipeline (Qwen 3 text encoder through its chat template); guidance on when > 0."""
    from diffusers import ZImagePipeline, ZImageTransformer2DModel
    from transformers import Qwen3Model

    tokenizer = qwen_tokenizer()
    torch.manual_seed(SEED)
    transformer = ZImageTransformer2DModel(
        all_patch_size=(2,), all_f_patch_size=(1,), in_channels=4, dim=32, n_layers=1, n_refiner_layers=1,
        n_heads=2, n_kv_heads=2, cap_feat_dim=TEXT_DIM, axes_dims=[8, 4, 4], axes_lens=[256, 32, 32])
    with torch.no_grad():  # made with torch.empty: NaN would come out of uninitialised memory
        transformer.x_pad_token.copy_(torch.ones_like(transformer.x_pad_token))
        transformer.cap_pad_token.copy_(torch.ones_like(transformer.cap_pad_token))
    vae = dit.kl_vae(4, use_quant_conv=False, use_post_quant_conv=False, shift_factor=0.1159, scaling_factor=0.3611)
    torch.manual_seed(SEED)
    text_encoder = Qwen3Model(_decoder_config("Qwen3Config", len(tokenizer), 2)).eval()
    pipe = ZImagePipeline(transformer=transformer, vae=vae, scheduler=dit.flow_scheduler(shift=3.0),
                          text_encoder=text_encoder, tokenizer=tokenizer)
    pipe.save_pretrained(folder, safe_serialization=True)


def build_hidream(folder: Path) -> None:
    """HiDreamImagePipeline: four text encoders (two CLIPs with 248 positions as Long-CLIP's,
    T5, Llama 3.1, whose hidden states of ``llama_layers`` feed the blocks), a mixture-of-experts
    DiT. One folder for I1 Full / Dev / Fast (they differ in weights and scheduler)."""
    from diffusers import HiDreamImagePipeline, HiDreamImageTransformer2DModel
    from transformers import LlamaForCausalLM

    torch.manual_seed(SEED)
    transformer = HiDreamImageTransformer2DModel(
        # HiDream's call always denoises a 128 x 128 latent (its default_sample_size, whatever the asked
        # size: that sets only the aspect ratio): patches of 8 make it 256 tokens
        patch_size=8, in_channels=4, out_channels=4, num_layers=1, num_single_layers=1, attention_head_dim=8,
        num_attention_heads=4, caption_channels=[dit.TEXT_DIM, TEXT_DIM],  # T5's width, Llama's
        text_emb_dim=32,  # the two CLIP projections, concatenated
        num_routed_experts=2, num_activated_experts=1, axes_dims_rope=(4, 2, 2), max_resolution=(128, 128),
        llama_layers=(0, 1)).eval()
    tokenizer_3 = dit.t5_tokenizer()
    tokenizer_4 = fast_bpe_tokenizer(prefix=("<|begin_of_text|>",), eos="<|eot_id|>", pad="<|eot_id|>")
    torch.manual_seed(SEED)
    llama = LlamaForCausalLM(_decoder_config("LlamaConfig", len(tokenizer_4), 2)).eval()
    pipe = HiDreamImagePipeline(
        scheduler=dit.flow_scheduler(shift=3.0),
        # one block, vae_scale_factor 1: the images are the latent's 128 px (the real VAE's 8 makes 1024)
        vae=dit.kl_vae(4, down_block_types=("DownEncoderBlock2D",), up_block_types=("UpDecoderBlock2D",),
                       block_out_channels=(8,), mid_block_add_attention=False,  # no attention over 128 x 128
                       use_quant_conv=False, use_post_quant_conv=False, shift_factor=0.1159, scaling_factor=0.3611),
        text_encoder=dit.clip_text_encoder(16, with_projection=True, positions=248),
        tokenizer=dit.clip_tokenizer(),
        text_encoder_2=dit.clip_text_encoder(16, with_projection=True, positions=248),
        tokenizer_2=dit.clip_tokenizer(),
        text_encoder_3=dit.t5_encoder(len(tokenizer_3)),
        tokenizer_3=tokenizer_3,
        text_encoder_4=llama,
        tokenizer_4=tokenizer_4,
        transformer=transformer,
    )
    pipe.save_pretrained(folder, safe_serialization=True)


def build_cogview3plus(folder: Path) -> None:
    """CogView3PlusPipeline (T5 text encoder, CogVideoX's DDIM scheduler)."""
    from diffusers import CogVideoXDDIMScheduler, CogView3PlusPipeline, CogView3PlusTransformer2DModel

    torch.manual_seed(SEED)
    transformer = CogView3PlusTransformer2DModel(
        patch_size=2, in_channels=4, num_layers=1, attention_head_dim=8, num_attention_heads=2, out_channels=4,
        text_embed_dim=dit.TEXT_DIM, time_embed_dim=8, condition_dim=2, pos_embed_max_size=8, sample_size=8)
    tokenizer = dit.t5_tokenizer()
    pipe = CogView3PlusPipeline(
        transformer=transformer, vae=dit.kl_vae(4), tokenizer=tokenizer, text_encoder=dit.t5_encoder(len(tokenizer)),
        # the checkpoint's scheduler (v-prediction, zero terminal SNR)
        scheduler=CogVideoXDDIMScheduler(beta_schedule="scaled_linear", prediction_type="v_prediction",
                                         rescale_betas_zero_snr=True, snr_shift_scale=4.0, timestep_spacing="trailing"))
    pipe.save_pretrained(folder, safe_serialization=True)


def build_cogview4(folder: Path) -> None:
    """CogView4Pipeline (GLM-4 text encoder, its prompt left-padded to a multiple of 16)."""
    from diffusers import CogView4Pipeline, CogView4Transformer2DModel
    from transformers import GlmModel

    torch.manual_seed(SEED)
    transformer = CogView4Transformer2DModel(
        patch_size=2, in_channels=4, num_layers=1, attention_head_dim=8, num_attention_heads=2, out_channels=4,
        text_embed_dim=TEXT_DIM, time_embed_dim=8, condition_dim=4, sample_size=8, rope_axes_dim=(8, 8))
    tokenizer = fast_bpe_tokenizer(prefix=("[gMASK]", "<sop>"), eos="<|endoftext|>", pad="<|endoftext|>")
    torch.manual_seed(SEED)
    text_encoder = GlmModel(_decoder_config("GlmConfig", len(tokenizer), 2, pad_token_id=tokenizer.pad_token_id))
    pipe = CogView4Pipeline(
        transformer=transformer, vae=dit.kl_vae(4), tokenizer=tokenizer, text_encoder=text_encoder.eval(),
        scheduler=dit.flow_scheduler(base_shift=0.25, max_shift=0.75, base_image_seq_len=256,
                                     use_dynamic_shifting=True, time_shift_type="linear"))
    pipe.save_pretrained(folder, safe_serialization=True)


def build_auraflow(folder: Path) -> None:
    """AuraFlowPipeline (UMT5 text encoder, MMDiT then single-stream blocks)."""
    from diffusers import AuraFlowPipeline, AuraFlowTransformer2DModel
    from transformers import UMT5Config, UMT5EncoderModel

    torch.manual_seed(SEED)
    transformer = AuraFlowTransformer2DModel(
        sample_size=8, patch_size=2, in_channels=4, num_mmdit_layers=1, num_single_dit_layers=1,
        attention_head_dim=8, num_attention_heads=2, caption_projection_dim=16, joint_attention_dim=dit.TEXT_DIM,
        out_channels=4, pos_embed_max_size=64)
    tokenizer = dit.t5_tokenizer()
    torch.manual_seed(SEED)
    text_encoder = UMT5EncoderModel(UMT5Config(
        vocab_size=len(tokenizer), d_model=dit.TEXT_DIM, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
        relative_attention_num_buckets=8, dropout_rate=0.0, feed_forward_proj="gated-gelu", pad_token_id=0,
        eos_token_id=1, decoder_start_token_id=0)).eval()
    pipe = AuraFlowPipeline(transformer=transformer, vae=dit.kl_vae(4), tokenizer=tokenizer,
                            text_encoder=text_encoder, scheduler=dit.flow_scheduler(shift=1.73))
    pipe.save_pretrained(folder, safe_serialization=True)


def build_sana_sprint(folder: Path) -> None:
    """SanaSprintPipeline (Sana's Gemma 2 and DC-AE, a transformer with guidance embedding and
    SCM's consistency scheduler); guidance is an input of the transformer, never CFG."""
    from diffusers import SanaSprintPipeline, SanaTransformer2DModel, SCMScheduler

    torch.manual_seed(SEED)
    transformer = SanaTransformer2DModel(
        sample_size=32, patch_size=1, in_channels=4, out_channels=4, num_layers=1, num_attention_heads=2,
        attention_head_dim=16, num_cross_attention_heads=2, cross_attention_head_dim=16, cross_attention_dim=32,
        caption_channels=dit.TEXT_DIM, qk_norm="rms_norm_across_heads", guidance_embeds=True)
    tokenizer = dit.gemma_tokenizer()
    pipe = SanaSprintPipeline(tokenizer=tokenizer, text_encoder=dit.gemma_encoder(len(tokenizer)), vae=dit.dc_ae(),
                              transformer=transformer, scheduler=SCMScheduler())
    pipe.save_pretrained(folder, safe_serialization=True)


def _init_chatglm(model) -> None:
    """Random weights for diffusers' ChatGLMModel, whose ``_init_weights`` does nothing: under
    transformers 5 its parameters stay uninitialised memory (huge or NaN) unless set."""
    torch.manual_seed(SEED)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "layernorm" in name:
                parameter.fill_(1.0)
            elif name.endswith(".bias"):
                parameter.zero_()
            else:
                parameter.normal_(0.0, 0.02)


def build_kolors(folder: Path) -> None:
    """KolorsPipeline (an SDXL-layout UNet conditioned on ChatGLM3's hidden states, projected by the
    UNet's ``text_proj`` as the real one's 4096 to 2048; ChatGLM's SentencePiece tokenizer)."""
    from diffusers import EulerDiscreteScheduler, KolorsPipeline, UNet2DConditionModel
    from diffusers.pipelines.kolors.text_encoder import ChatGLMConfig, ChatGLMModel

    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = chatglm_tokenizer(Path(tmp))
        torch.manual_seed(SEED)
        text_encoder = ChatGLMModel(ChatGLMConfig(
            num_layers=2, padded_vocab_size=len(tokenizer), hidden_size=TEXT_DIM * 2, ffn_hidden_size=64,
            kv_channels=16, num_attention_heads=2, seq_length=256, add_qkv_bias=True, multi_query_attention=True,
            multi_query_group_num=1, original_rope=True, torch_dtype="float32")).eval()
        _init_chatglm(text_encoder)
        torch.manual_seed(SEED)
        unet = UNet2DConditionModel(
            sample_size=8, in_channels=4, out_channels=4, block_out_channels=(8, 16), layers_per_block=1,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
            attention_head_dim=(2, 4), use_linear_projection=True, transformer_layers_per_block=(1, 1),
            norm_num_groups=4, cross_attention_dim=16, encoder_hid_dim=TEXT_DIM * 2, encoder_hid_dim_type="text_proj",
            addition_embed_type="text_time", addition_time_embed_dim=8,
            projection_class_embeddings_input_dim=8 * 6 + TEXT_DIM * 2)  # time ids + ChatGLM's pooled output
        scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.014, beta_schedule="scaled_linear",
                                           steps_offset=1, timestep_spacing="leading")
        pipe = KolorsPipeline(vae=dit.kl_vae(4), text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
                              scheduler=scheduler, image_encoder=None, feature_extractor=None)
        pipe.save_pretrained(folder, safe_serialization=True)


#: key -> builder(folder) writing that family's pipeline folder
RECENT_FAMILIES: dict[str, Callable[[Path], None]] = {
    "qwen_image": build_qwen_image,
    "z_image": build_z_image,
    "hidream": build_hidream,
    "cogview3plus": build_cogview3plus,
    "cogview4": build_cogview4,
    "auraflow": build_auraflow,
    "sana_sprint": build_sana_sprint,
    "kolors": build_kolors,
}
