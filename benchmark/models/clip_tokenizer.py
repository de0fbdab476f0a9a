"""A real CLIP tokenizer built offline from the BPE vocabulary that open_clip ships.

open_clip's package holds ``bpe_simple_vocab_16e6.txt.gz`` (OpenAI's CLIP BPE merges).
From it we write the two files of Hugging Face's CLIP tokenizer layout:

* ``vocab.json``: the 256 byte characters (GPT-2 byte-to-unicode map), the same 256
  with ``</w>``, one entry per merge (48,894), then ``<|startoftext|>`` and
  ``<|endoftext|>``: 49,408 entries, ids identical to open_clip's ``SimpleTokenizer``
  (open_clip names the two specials ``<start_of_text>`` / ``<end_of_text>``; the ids
  49406 / 49407 are the same);
* ``merges.txt``: ``#version: 0.2`` then the merges, one per line.

Then ``CLIPTokenizer(vocab, merges, model_max_length=77)`` is the tokenizer
Stable Diffusion 1.x ships (``model_max_length`` must be 77 or the pipeline overflows
the text encoder's position embeddings).
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

__all__ = [
    "CLIP_VOCAB_SIZE",
    "CLIP_MAX_LENGTH",
    "open_clip_bpe_path",
    "write_clip_tokenizer_files",
    "build_clip_tokenizer",
]

CLIP_VOCAB_SIZE = 49408
CLIP_MAX_LENGTH = 77
BOS, EOS = "<|startoftext|>", "<|endoftext|>"


def open_clip_bpe_path() -> Path:
    """Path of ``bpe_simple_vocab_16e6.txt.gz`` inside the installed open_clip package."""
    import open_clip

    path = Path(open_clip.__file__).with_name("bpe_simple_vocab_16e6.txt.gz")
    if not path.is_file():  # pragma: no cover - broken install
        raise FileNotFoundError(f"open_clip's BPE vocabulary is missing: {path}")
    return path


def _merges() -> list[tuple[str, str]]:
    lines = gzip.open(open_clip_bpe_path()).read().decode("utf-8").split("\n")
    # The same slice as open_clip.tokenizer.SimpleTokenizer: skip the header line,
    # keep 49152 - 256 - 2 merges.
    lines = lines[1 : 49152 - 256 - 2 + 1]
    return [tuple(line.split()) for line in lines]  # type: ignore[misc]


def write_clip_tokenizer_files(folder: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``vocab.json`` and ``merges.txt`` into ``folder``; return their paths."""
    from open_clip.tokenizer import bytes_to_unicode

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    merges = _merges()
    vocab = list(bytes_to_unicode().values())
    vocab = vocab + [v + "</w>" for v in vocab]
    vocab.extend("".join(m) for m in merges)
    vocab.extend([BOS, EOS])
    if len(vocab) != CLIP_VOCAB_SIZE:  # pragma: no cover - would mean a different BPE file
        raise RuntimeError(f"CLIP vocabulary has {len(vocab)} entries, expected {CLIP_VOCAB_SIZE}")
    vocab_path, merges_path = folder / "vocab.json", folder / "merges.txt"
    vocab_path.write_text(json.dumps({tok: i for i, tok in enumerate(vocab)}, ensure_ascii=False), encoding="utf-8")
    merges_path.write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n", encoding="utf-8")
    return vocab_path, merges_path


def build_clip_tokenizer(folder: str | os.PathLike, *, pad_token: str = EOS):
    """A transformers ``CLIPTokenizer`` over the files written into ``folder``.

    ``pad_token`` defaults to ``<|endoftext|>`` as in Stable Diffusion 1.x's tokenizer.
    Call ``save_pretrained(folder)`` on the result to get a loadable tokenizer folder.
    """
    from transformers import CLIPTokenizer

    vocab_path, _ = write_clip_tokenizer_files(folder)
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    # transformers 5's tokenizers-backed CLIPTokenizer takes the vocabulary and merges
    # themselves (not file paths); save_pretrained then writes tokenizer.json too.
    return CLIPTokenizer(
        vocab=vocab,
        merges=_merges(),
        model_max_length=CLIP_MAX_LENGTH,
        pad_token=pad_token,
    )
