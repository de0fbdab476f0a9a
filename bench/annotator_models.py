"""The default annotators with random weights, built from their published configs
(``bench/configs/``) into folders the real loaders read (no weights are downloaded):

The annotators are those a real audit runs: every annotator kind's default model outside
built-in runs (:mod:`benchmark.annotate.kinds`), so a kind a task folder adds is built here
when its model is one of these architectures.

* the CLIP encoders (``open_clip:<name>:openai``: ViT-L/14 (GEP) and the six OpenAI CLIPs of
  Generated Bias): open_clip's own
  ``local-dir`` layout (``open_clip_config.json`` + ``open_clip_model.safetensors``), loaded
  as ``open_clip:local-dir:FOLDER``;
* BLIP-2 OPT-2.7b: ``Blip2ForConditionalGeneration`` + ``Blip2Processor`` (CLIP BPE tokenizer:
  OPT's cannot be fetched offline), loaded as a VQA folder;
* DETR ResNet-50: ``DetrForObjectDetection`` + ``DetrImageProcessor``, loaded as a detector folder.

``tiny=True`` keeps each architecture family (ViT or ResNet CLIP, BLIP-2 with OPT, DETR with
a ResNet backbone) and shrinks widths and depths, so the CPU path runs the same code.
"""

from __future__ import annotations

import gc
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from benchmark import frozen_imports  # noqa: E402
frozen_imports.install()  # the heavy libraries load as under t2ibench (benchmark/frozen_imports.py)

from benchmark.annotate.kinds import list_annotator_kinds  # noqa: E402
from benchmark.models.defaults import DEFAULT_DETECTOR, DEFAULT_VQA  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parent / "configs"

#: test-sized CLIP towers (ViT or modified ResNet) for tiny=True
_TINY_TEXT = {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2}
_TINY_VIT = {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8}
_TINY_RESNET = {"image_size": 32, "layers": [1, 1, 1, 1], "width": 8}


def free_memory(tiny: bool) -> None:
    """A full-size model's memory back before the next one is built; at tiny sizes there is
    nothing to free, and gc.collect costs ~0.3 s a call with the libraries loaded."""
    if not tiny:
        gc.collect()


def load_config(name: str) -> dict:
    return json.loads((CONFIG_DIR / f"{name}.json").read_text(encoding="utf-8"))


def _clean(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if not k.startswith("_")}


def clip_model_config(name: str, tiny: bool) -> dict:
    """open_clip's bundled config of ``name`` with OpenAI's QuickGELU, or its tiny shrink."""
    import open_clip

    cfg = json.loads(json.dumps(open_clip.get_model_config(name)))
    cfg["quick_gelu"] = bool(load_config("clip_encoders")["quick_gelu"])
    if tiny:
        resnet = isinstance(cfg["vision_cfg"].get("layers"), (list, tuple))
        cfg = {"embed_dim": 16, "quick_gelu": cfg["quick_gelu"], "text_cfg": dict(_TINY_TEXT),
               "vision_cfg": dict(_TINY_RESNET if resnet else _TINY_VIT)}
    return cfg


def build_clip_folder(name: str, folder: Path, device: str, tiny: bool = False) -> str:
    """One CLIP encoder in open_clip's local-dir layout; returns its annotator spec."""
    import open_clip
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model_cfg = clip_model_config(name, tiny)
    torch.manual_seed(0)
    with torch.device(device):
        model = open_clip.CLIP(**model_cfg)
    config = {"model_cfg": model_cfg, "preprocess_cfg": load_config("clip_encoders")["preprocess_cfg"]}
    (folder / "open_clip_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    dtype = torch.float16 if device != "cpu" else torch.float32
    save_file({k: v.to(dtype).contiguous().cpu() for k, v in model.state_dict().items()},
              str(folder / "open_clip_model.safetensors"))
    del model
    free_memory(tiny)
    return f"open_clip:local-dir:{folder}"


def _tiny_blip2(cfg: dict) -> dict:
    cfg = json.loads(json.dumps(cfg))
    cfg["num_query_tokens"] = 4
    cfg["vision_config"].update(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                image_size=32, patch_size=8)
    cfg["qformer_config"].update(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=64, encoder_hidden_size=32)
    cfg["text_config"].update(hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
                              max_position_embeddings=128, word_embed_proj_dim=32)
    cfg["image_processor"]["size"] = {"height": 32, "width": 32}
    return cfg


def build_blip2_folder(folder: Path, device: str, tiny: bool = False) -> str:
    """BLIP-2 OPT-2.7b (random weights) + its processor; returns the VQA spec (the folder)."""
    import torch
    from transformers import (Blip2Config, Blip2ForConditionalGeneration, Blip2Processor, Blip2QFormerConfig,
                              Blip2VisionConfig, BlipImageProcessor, OPTConfig)

    from benchmark.models.clip_tokenizer import build_clip_tokenizer

    cfg = load_config("blip2_opt_2.7b")
    cfg = _tiny_blip2(cfg) if tiny else cfg
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_clip_tokenizer(folder / "_tokenizer_files")
    shutil.rmtree(folder / "_tokenizer_files")
    tokenizer.model_max_length = 64
    processor = Blip2Processor(image_processor=BlipImageProcessor(**cfg["image_processor"]), tokenizer=tokenizer,
                               num_query_tokens=cfg["num_query_tokens"])
    tok = processor.tokenizer
    text = OPTConfig(**_clean(cfg["text_config"]), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                     pad_token_id=tok.pad_token_id)
    if text.vocab_size < len(tok):
        raise ValueError(f"vocab_size {text.vocab_size} < tokenizer size {len(tok)}")
    config = Blip2Config(vision_config=Blip2VisionConfig(**cfg["vision_config"]).to_dict(),
                         qformer_config=Blip2QFormerConfig(**cfg["qformer_config"]).to_dict(),
                         text_config=text.to_dict(), num_query_tokens=cfg["num_query_tokens"],
                         image_token_index=tok.convert_tokens_to_ids("<image>"))
    torch.manual_seed(0)
    with torch.device(device):
        model = Blip2ForConditionalGeneration(config)
    if device != "cpu":
        model.to(torch.float16)  # half the disk and load time; the loader casts to its dtype
    gen = model.generation_config
    gen.max_new_tokens, gen.bos_token_id, gen.eos_token_id, gen.pad_token_id = (
        8, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id)
    model.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)
    del model
    free_memory(tiny)
    return str(folder)


def build_detr_folder(folder: Path, device: str, tiny: bool = False) -> str:
    """DETR ResNet-50 (random weights, COCO labels) + its image processor; returns the detector spec."""
    import torch
    from transformers import DetrConfig, DetrForObjectDetection, DetrImageProcessor, ResNetConfig

    from benchmark.models.detector import COCO_NAMES, tiny_detr_config

    cfg = load_config("detr_resnet50")
    id2label = {i: n for i, n in enumerate(COCO_NAMES)}
    if tiny:
        config = tiny_detr_config()
        size = {"shortest_edge": 64, "longest_edge": 64}
    else:
        config = DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False,
                            backbone_config=ResNetConfig(**cfg["backbone"]), num_labels=len(COCO_NAMES),
                            id2label=id2label, label2id={n: i for i, n in id2label.items()}, **cfg["detr"])
        size = cfg["image_processor"]["size"]
    torch.manual_seed(0)
    with torch.device(device):
        model = DetrForObjectDetection(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    DetrImageProcessor(size=size).save_pretrained(folder)
    del model
    free_memory(tiny)
    return str(folder)


def audit_models() -> dict[str, tuple[bool, list[str]]]:
    """Each annotator run option -> (whether it takes several models, the models a real audit
    gives it: its kind's default outside built-in runs), in annotator-kind order."""
    out: dict[str, tuple[bool, list[str]]] = {}
    for kind in list_annotator_kinds():
        default = kind.default(False)
        out.setdefault(kind.option, (kind.many, list(default) if kind.many else [default]))
    return out


def clip_name(spec: str) -> str | None:
    """The open_clip model name of an ``open_clip:<name>:openai`` spec (None for another model)."""
    parts = spec.split(":")
    return parts[1] if len(parts) == 3 and parts[0] == "open_clip" else None


def build_annotators(root: Path, device: str, tiny: bool = False) -> dict:
    """Every default annotator with weights into ``root`` (:func:`audit_models` whose models all
    have a config here; each model built once); returns the ``t2ibench run`` options naming them."""
    builders = {DEFAULT_VQA: lambda: build_blip2_folder(root / "blip2", device, tiny),
                DEFAULT_DETECTOR: lambda: build_detr_folder(root / "detr", device, tiny)}
    built: dict[str, str] = {}

    def build(spec: str) -> str:
        if spec not in built:
            name = clip_name(spec)
            built[spec] = build_clip_folder(name, root / f"clip-{name}", device, tiny) if name else builders[spec]()
        return built[spec]

    options: dict = {}
    for option, (many, specs) in audit_models().items():
        if specs and all(clip_name(s) or s in builders for s in specs):
            folders = [build(s) for s in specs]
            options[option] = folders if many else folders[0]
    return options


def parameter_counts(device: str = "meta") -> dict[str, int]:
    """Parameters of every full-size annotator built from the configs (meta device: no memory)."""
    import open_clip
    import torch
    from transformers import (Blip2Config, Blip2ForConditionalGeneration, Blip2QFormerConfig, Blip2VisionConfig,
                              DetrConfig, DetrForObjectDetection, OPTConfig, ResNetConfig)

    out = {}
    clips = [n for _, specs in audit_models().values() for n in map(clip_name, specs) if n]
    b, d = load_config("blip2_opt_2.7b"), load_config("detr_resnet50")
    with torch.device(device):
        for name in dict.fromkeys(clips):
            out[f"CLIP {name}"] = sum(p.numel() for p in open_clip.CLIP(**clip_model_config(name, False)).parameters())
        config = Blip2Config(vision_config=Blip2VisionConfig(**b["vision_config"]).to_dict(),
                             qformer_config=Blip2QFormerConfig(**b["qformer_config"]).to_dict(),
                             text_config=OPTConfig(**_clean(b["text_config"])).to_dict(),
                             num_query_tokens=b["num_query_tokens"])
        out["BLIP-2 OPT-2.7b"] = sum(p.numel() for p in Blip2ForConditionalGeneration(config).parameters())
        detr = DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False,
                          backbone_config=ResNetConfig(**d["backbone"]), num_labels=91, **d["detr"])
        out["DETR ResNet-50"] = sum(p.numel() for p in DetrForObjectDetection(detr).parameters())
    return out


if __name__ == "__main__":
    for k, v in parameter_counts().items():
        print(f"{k}: {v:,}")
