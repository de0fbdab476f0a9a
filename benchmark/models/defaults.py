"""Default annotator models, importable without torch (the runner picks annotators
before it loads anything)."""

#: seed 000 (GEP) scores with CLIP ViT-L/14 (OpenAI weights)
DEFAULT_ENCODER = "open_clip:ViT-L-14:openai"

#: the six OpenAI CLIP encoders seed 004 averages Diffusion Bias / Bias Amplification over
SEED004_ENCODERS = (
    "open_clip:RN50:openai",
    "open_clip:RN50x4:openai",
    "open_clip:RN50x16:openai",
    "open_clip:RN101:openai",
    "open_clip:ViT-B-16:openai",
    "open_clip:ViT-B-32:openai",
)

#: the VQA model family DALL-Eval uses (BLIP-2)
DEFAULT_VQA = "Salesforce/blip2-opt-2.7b"
