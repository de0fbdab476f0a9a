"""Default annotator models, importable without torch (the runner picks annotators
before it loads anything), and what counts as a built-in tiny model."""


#: GEP scores with CLIP ViT-L/14 (OpenAI weights)
DEFAULT_ENCODER = "open_clip:ViT-L-14:openai"

#: the VQA model family DALL-Eval uses (BLIP-2)
DEFAULT_VQA = "Salesforce/blip2-opt-2.7b"

#: the built-in tiny random-weight annotators a run of a built-in model gets (offline)
TINY_ENCODER = "builtin:tiny-clip"
TINY_VQA = "builtin:tiny-vqa"

#: the detector a real audit uses (DALL-Eval fine-tunes a COCO DETR; the COCO one is the default
#: until a fine-tuned folder is given with --detector)
DEFAULT_DETECTOR = "facebook/detr-resnet-50"
TINY_DETECTOR = "builtin:tiny-detr"
