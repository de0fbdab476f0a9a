"""Token-level helpers both VQA backends share: where an answer's tokens start after a
prompt, the padding side of a call, and the log-probability of the answer tokens."""

from __future__ import annotations

from contextlib import contextmanager

__all__ = ["AnswerTokens", "answer_separator", "gather_answer_scores", "padding_side", "strip_special_tail"]


def strip_special_tail(ids: list[int], specials: set[int]) -> tuple[list[int], int]:
    k = len(ids)
    while k and ids[k - 1] in specials:
        k -= 1
    return ids[:k], len(ids) - k


def answer_separator(prompt: str) -> str:
    # "Answer:" + " male"; a chat prompt ending in a newline takes the answer as is
    return "" if not prompt or prompt[-1].isspace() else " "



@contextmanager
def padding_side(tokenizer, side: str):
    old = tokenizer.padding_side
    tokenizer.padding_side = side
    try:
        yield
    finally:
        tokenizer.padding_side = old


class AnswerTokens:
    """(context ids, answer ids, trailing special tokens) of prompt + answer, cached.

    The context is the prompt as the tokenizer encodes it alone (what ``generate`` sees);
    the answer's tokens are those the tokenizer gives after the prompt when the two are
    encoded together (prompt, a space unless the prompt ends in whitespace, the answer),
    without the special tokens the tokenizer appends (``</s>`` of T5, CLIP's end token):
    the likelihood is that of the answer starting the reply, not of the reply ending
    there."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.specials = set(getattr(tokenizer, "all_special_ids", []) or [])
        self._prompts: dict[str, list[int]] = {}
        self._pairs: dict[tuple[str, str], tuple[list[int], list[int], int]] = {}

    def prompt(self, prompt: str) -> list[int]:
        if prompt not in self._prompts:
            if len(self._prompts) > 100_000:
                self._prompts.clear()
            self._prompts[prompt] = list(self.tokenizer(prompt)["input_ids"])
        return self._prompts[prompt]

    def pair(self, prompt: str, answer: str) -> tuple[list[int], list[int], int]:
        key = (prompt, answer)
        if key not in self._pairs:
            if len(self._pairs) > 100_000:
                self._pairs.clear()
            ctx = self.prompt(prompt)
            full = list(self.tokenizer(prompt + answer_separator(prompt) + answer)["input_ids"])
            full_core, n_tail = strip_special_tail(full, self.specials)
            ctx_core, _ = strip_special_tail(ctx, self.specials)
            common = 0
            while common < min(len(full_core), len(ctx_core)) and full_core[common] == ctx_core[common]:
                common += 1
            ans = full_core[common:]
            if not ans:
                raise ValueError(f"answer {answer!r} adds no tokens after the prompt {prompt!r}")
            # a tokenizer that merges across the boundary: score the joint encoding's split
            context = ctx if common == len(ctx_core) else full_core[:common]
            self._pairs[key] = (context, ans, n_tail)
        return self._pairs[key]



def gather_answer_scores(logits, where: list[tuple[int, int, int]], n_tokens: list[int]) -> list[tuple[float, int]]:
    """Sum of log-softmax(logits[row, pos])[token] per row, in float32."""
    import torch

    r = torch.tensor([w[0] for w in where], device=logits.device)
    p = torch.tensor([w[1] for w in where], device=logits.device)
    t = torch.tensor([w[2] for w in where], device=logits.device)
    logp = logits[r, p].float().log_softmax(-1).gather(1, t[:, None]).squeeze(1)
    sums = torch.zeros(len(n_tokens), dtype=torch.float64, device=logits.device).index_add_(0, r, logp.double())
    return [(float(s), n) for s, n in zip(sums.tolist(), n_tokens)]
