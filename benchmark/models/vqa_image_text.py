"""The generic VQA backend: any ``AutoModelForImageTextToText`` model with its processor."""

from __future__ import annotations

from .vqa_base import VQAModel
from .vqa_tokens import AnswerTokens, answer_separator, gather_answer_scores, padding_side

__all__ = ["ImageTextToTextVQA"]


class ImageTextToTextVQA(VQAModel):
    """Any ``AutoModelForImageTextToText`` model; chat template when the processor has one.

    No generic way exists to hand one architecture's image features back to it, so the
    features are the decoded images and each forward / generate call runs the vision
    encoder for every row (``stats.feature_reuse`` is False); questions are still batched
    together, padded (right for scoring, left for generation)."""

    feature_kind = "images"

    def __init__(self, model, processor, *, name, device, dtype, batch_size=16, max_new_tokens=10,
                 score_batch_size=64, score_normalisation="sum"):
        self._set_up(model, processor, getattr(processor, "tokenizer", processor), name=name, device=device,
                     dtype=dtype, batch_size=batch_size, max_new_tokens=max_new_tokens,
                     score_batch_size=score_batch_size, score_normalisation=score_normalisation, feature_reuse=False)
        self.use_chat_template = bool(getattr(processor, "chat_template", None))
        self._tok = AnswerTokens(self.tokenizer)
        self.settings = {"kind": "image-text-to-text", "chat_template": self.use_chat_template,
                         **self.common_settings(dtype)}

    def _prompt(self, question: str) -> str:
        if not self.use_chat_template:
            return question
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def _encode_chunk(self, prepared: list):
        return list(prepared)  # nothing reusable: the vision encoder runs inside each call

    def _concat(self, parts: list):
        return [im for part in parts for im in part]

    def _inputs(self, images: list, texts: list[str], side: str) -> dict:
        import torch

        with padding_side(self.tokenizer, side):
            inputs = self.processor(images=images, text=texts, padding=True, return_tensors="pt")
        self.stats.images_encoded += len(images)
        self.stats.vision_batch_sizes.append(len(images))
        return {k: (v.to(self.device, self.dtype) if torch.is_floating_point(v) else v.to(self.device))
                for k, v in inputs.items()}

    def _score_chunk(self, images, rows):
        import torch

        split = [self._tok.pair(prompt, answer) for _, prompt, answer in rows]
        texts = [prompt + answer_separator(prompt) + answer for _, prompt, answer in rows]
        inputs = self._inputs([images[img] for img, _, _ in rows], texts, "right")
        with torch.inference_mode():
            logits = self.model(**inputs).logits
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        ids = inputs["input_ids"]
        where = []
        for r, (_, ans, n_tail) in enumerate(split):
            first = int(lengths[r]) - n_tail - len(ans)  # the answer ends the row, before the tail
            for j in range(len(ans)):
                where.append((r, first + j - 1, int(ids[r, first + j])))
        return gather_answer_scores(logits, where, [len(ans) for _, ans, _ in split])

    def _generate_chunk(self, images, rows):
        import torch

        inputs = self._inputs([images[img] for img, _ in rows], [prompt for _, prompt in rows], "left")
        with torch.inference_mode():
            out = self.model.generate(**inputs, **self.generate_kwargs)
        prompt_ids = inputs["input_ids"]
        n = prompt_ids.shape[1]
        # decoder-only language models echo the prompt; keep the new tokens only
        if out.shape[1] >= n and torch.equal(out[:, :n].to(prompt_ids.device), prompt_ids):
            out = out[:, n:]
        return self.processor.batch_decode(out, skip_special_tokens=True)
