"""The BLIP-2 VQA backend (``Blip2ForConditionalGeneration``, the family DALL-Eval uses),
and the builder of ``builtin:tiny-vqa``, a tiny random BLIP-2 loaded back through it."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from .builtin_cache import BUILTIN_SEED
from .clip_tokenizer import CLIP_VOCAB_SIZE, build_clip_tokenizer
from .vqa_base import VQAModel
from .vqa_tokens import AnswerTokens, gather_answer_scores

__all__ = ["BLIP2_PROMPT", "Blip2VQA", "build_tiny_vqa"]

#: DALL-Eval's prompt wrapper for BLIP-2 (reference/bias_attributes_and_vqa_questions.json)
BLIP2_PROMPT = "Question: {q} Answer:"


class Blip2VQA(VQAModel):
    """BLIP-2 with the paper's ``"Question: {q} Answer:"`` wrapper; image features
    (the language-model inputs from the Q-Former) are computed once per image."""

    feature_kind = "blip2-language-inputs"

    def __init__(self, model, processor, *, name, device, dtype, batch_size=16, max_new_tokens=10, is_builtin=False,
                 score_batch_size=64, score_normalisation="sum"):
        self._set_up(model, processor, processor.tokenizer, name=name, device=device, dtype=dtype,
                     batch_size=batch_size, max_new_tokens=max_new_tokens, score_batch_size=score_batch_size,
                     score_normalisation=score_normalisation, feature_reuse=True)
        self.is_builtin = is_builtin
        self.prompt_template = BLIP2_PROMPT
        self._tok = AnswerTokens(self.tokenizer)
        cfg = model.config
        self.image_token_id = int(getattr(cfg, "image_token_id", None) or cfg.image_token_index)
        self.num_query_tokens = int(cfg.num_query_tokens)
        self.decoder_only = bool(cfg.use_decoder_only_language_model)
        pad = self.tokenizer.pad_token_id
        self.pad_token_id = int(pad if pad is not None else (cfg.text_config.pad_token_id or 0))
        self.settings = {"kind": "blip2", "prompt_template": BLIP2_PROMPT, **self.common_settings(dtype)}

    def _prompt(self, question: str) -> str:
        return self.prompt_template.format(q=question)

    def prepare_images(self, images: Sequence):
        rgb = [im.convert("RGB") for im in images]
        return self.processor.image_processor(rgb, return_tensors="pt")["pixel_values"]

    @staticmethod
    def _take(prepared, idx: list[int]):
        return prepared[list(idx)]

    def _encode_chunk(self, pixels):
        import torch

        n = len(pixels)
        pixels = pixels.to(self.device, self.dtype)
        m = self.model
        with torch.inference_mode():
            # as Blip2ForConditionalGeneration.generate: vision encoder -> Q-Former -> projection
            image_embeds = m.vision_model(pixel_values=pixels, return_dict=True).last_hidden_state
            mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
            query = m.query_tokens.expand(image_embeds.shape[0], -1, -1)
            q_out = m.qformer(query_embeds=query, encoder_hidden_states=image_embeds, encoder_attention_mask=mask,
                              return_dict=True).last_hidden_state
            if q_out.dtype != image_embeds.dtype:  # the Q-Former may be kept in fp32
                q_out = q_out.to(image_embeds.dtype)
            feats = m.language_projection(q_out)
        self.stats.images_encoded += n
        self.stats.vision_batch_sizes.append(n)
        return feats

    def _concat(self, parts: list):
        import torch

        if not parts:
            hidden = self.model.config.text_config.hidden_size
            return torch.zeros(0, self.num_query_tokens, hidden, device=self.device, dtype=self.dtype)
        return torch.cat(parts, dim=0)

    def _embed(self, ids, images: list[int], feats):
        """Token embeddings with the image placeholders replaced by each row's features."""
        import torch

        embeds = self.model.get_input_embeddings()(ids)
        mask = (ids == self.image_token_id).unsqueeze(-1).expand_as(embeds)
        rows = feats[torch.tensor(images, device=feats.device)].to(embeds.device, embeds.dtype)
        return embeds.masked_scatter(mask, rows)

    def _score_chunk(self, feats, rows):
        import torch

        q = [self.image_token_id] * self.num_query_tokens
        split = [self._tok.pair(prompt, answer) for _, prompt, answer in rows]
        images = [img for img, _, _ in rows]
        dev, pad = self.device, self.pad_token_id
        lm = self.model.language_model
        if self.decoder_only:
            seqs = [q + ctx + ans for ctx, ans, _ in split]
            width = max(map(len, seqs))
            ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=dev)
            attn = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=dev)
            # answer token j of row r sits at len(q + ctx) + j and is predicted one position earlier
            where = [(r, len(q) + len(ctx) + j - 1, t) for r, (ctx, ans, _) in enumerate(split)
                     for j, t in enumerate(ans)]
            with torch.inference_mode():
                logits = lm(inputs_embeds=self._embed(ids, images, feats), attention_mask=attn).logits
        else:  # encoder-decoder (Flan-T5): image + prompt in, answer scored by the decoder
            enc = [q + ctx for ctx, _, _ in split]
            width = max(map(len, enc))
            ids = torch.tensor([s + [pad] * (width - len(s)) for s in enc], device=dev)
            attn = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in enc], device=dev)
            start = lm.config.decoder_start_token_id
            dec = [[start] + ans[:-1] for _, ans, _ in split]
            dwidth = max(map(len, dec))
            dec_ids = torch.tensor([s + [pad] * (dwidth - len(s)) for s in dec], device=dev)
            dec_attn = torch.tensor([[1] * len(s) + [0] * (dwidth - len(s)) for s in dec], device=dev)
            where = [(r, j, t) for r, (_, ans, _) in enumerate(split) for j, t in enumerate(ans)]
            with torch.inference_mode():
                logits = lm(inputs_embeds=self._embed(ids, images, feats), attention_mask=attn,
                            decoder_input_ids=dec_ids, decoder_attention_mask=dec_attn).logits
        return gather_answer_scores(logits, where, [len(ans) for _, ans, _ in split])

    def _generate_chunk(self, feats, rows):
        import torch

        q = [self.image_token_id] * self.num_query_tokens
        seqs = [q + self._tok.prompt(prompt) for _, prompt in rows]
        images = [img for img, _ in rows]
        width = max(map(len, seqs))
        dev, pad = self.device, self.pad_token_id
        lm = self.model.language_model
        if self.decoder_only:  # left padding: every row's next token comes at the same position
            ids = torch.tensor([[pad] * (width - len(s)) + s for s in seqs], device=dev)
            attn = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], device=dev)
        else:
            ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=dev)
            attn = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=dev)
        inputs = {"inputs_embeds": self._embed(ids, images, feats), "attention_mask": attn}
        if self.decoder_only:
            inputs["input_ids"] = ids  # as Blip2ForConditionalGeneration.generate passes them
        with torch.inference_mode():
            out = lm.generate(**inputs, **self.generate_kwargs, pad_token_id=pad)
        if self.decoder_only and out.shape[1] >= width and torch.equal(out[:, :width], ids):
            out = out[:, width:]
        return self.processor.batch_decode(out, skip_special_tokens=True)


# --------------------------------------------------------------------------- builtin:tiny-vqa


def build_tiny_vqa(folder: Path, seed: int = 0) -> None:
    """Write ``builtin:tiny-vqa`` to ``folder``: a tiny BLIP-2 (OPT language model) with random
    weights drawn after ``torch.manual_seed(BUILTIN_SEED)`` and a real CLIP BPE tokenizer (offline)."""
    import torch
    from transformers import (
        Blip2Config,
        Blip2ForConditionalGeneration,
        Blip2Processor,
        Blip2QFormerConfig,
        Blip2VisionConfig,
        BlipImageProcessor,
        OPTConfig,
    )

    num_query_tokens = 4
    # Real tokenizer (CLIP BPE, offline) + the "<image>" token Blip2Processor adds.
    tokenizer = build_clip_tokenizer(folder / "_tokenizer_files")
    shutil.rmtree(folder / "_tokenizer_files")
    tokenizer.model_max_length = 64
    image_processor = BlipImageProcessor(
        size={"height": 32, "width": 32},
        image_mean=[0.48145466, 0.4578275, 0.40821073],
        image_std=[0.26862954, 0.26130258, 0.27577711],
    )
    processor = Blip2Processor(image_processor=image_processor, tokenizer=tokenizer, num_query_tokens=num_query_tokens)
    image_token_id = processor.tokenizer.convert_tokens_to_ids("<image>")
    vocab_size = max(CLIP_VOCAB_SIZE, len(processor.tokenizer))
    text_config = OPTConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        ffn_dim=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=128,
        word_embed_proj_dim=32,
        bos_token_id=processor.tokenizer.bos_token_id,
        eos_token_id=processor.tokenizer.eos_token_id,
        pad_token_id=processor.tokenizer.pad_token_id,
    )
    config = Blip2Config(
        vision_config=Blip2VisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            image_size=32,
            patch_size=8,
        ).to_dict(),
        qformer_config=Blip2QFormerConfig(
            vocab_size=128,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            encoder_hidden_size=32,
        ).to_dict(),
        text_config=text_config.to_dict(),
        num_query_tokens=num_query_tokens,
        image_token_index=image_token_id,
    )
    torch.manual_seed(BUILTIN_SEED)
    model = Blip2ForConditionalGeneration(config)
    model.generation_config.max_new_tokens = 8
    model.generation_config.bos_token_id = processor.tokenizer.bos_token_id
    model.generation_config.eos_token_id = processor.tokenizer.eos_token_id
    model.generation_config.pad_token_id = processor.tokenizer.pad_token_id
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)
