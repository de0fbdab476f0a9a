"""What a run of MCAS / Generated Bias takes from the command line, declared light (no pandas,
no model library) so that ``t2ibench --help`` generates the options from it:

* the annotator kind ``mcas_embeddings`` (class in :mod:`benchmark.tasks.mcas.embeddings`,
  imported when an annotator is made) and its option ``--mcas-encoders``;
* the run input ``--mcas-reference`` / ``--mcas-reference-revision``: the attribute images of a
  reference-attributes dataset instead of the model's own (planned by
  :func:`benchmark.tasks.mcas.reference.plan_mcas_reference`; recorded in run_config.json as
  ``mcas_reference`` and in results.json as ``references.mcas``).
"""

from __future__ import annotations

from benchmark.annotate.kinds import AnnotatorKind
from benchmark.models.defaults import TINY_ENCODER
from benchmark.tasks.inputs import TaskInput

__all__ = ["EMBEDDINGS", "GENERATED_BIAS_ENCODERS", "REFERENCE", "ANNOTATORS", "INPUTS"]

#: the six OpenAI CLIP encoders Generated Bias averages Diffusion Bias / Bias Amplification over
GENERATED_BIAS_ENCODERS = (
    "open_clip:RN50:openai",
    "open_clip:RN50x4:openai",
    "open_clip:RN50x16:openai",
    "open_clip:RN101:openai",
    "open_clip:ViT-B-16:openai",
    "open_clip:ViT-B-32:openai",
)


def default_encoders(builtin: bool) -> tuple[str, ...]:
    return (TINY_ENCODER,) if builtin else GENERATED_BIAS_ENCODERS


EMBEDDINGS = AnnotatorKind(
    "mcas_embeddings", "benchmark.tasks.mcas.embeddings:MCASEmbeddingAnnotator", option="mcas_encoders",
    default=default_encoders, many=True,
    help="CLIP encoders averaged for MCAS / Diffusion Bias (default: the six OpenAI CLIPs of Generated Bias)")

REFERENCE = TaskInput(
    name="mcas_reference", results_key="mcas", plan="benchmark.tasks.mcas.reference:plan_mcas_reference",
    help="score MCAS / Generated Bias against the attribute images of a reference-attributes dataset (a folder "
         "from `python -m dataset_builders.reference_attributes` or a Hub dataset ID) instead of the model's own; "
         "mcas_attributes is then not generated",
    revision_help="with a Hub dataset ID for --mcas-reference: the revision (recorded as the resolved commit)",
    label="MCAS reference", what="attribute images", scored="MCAS and Generated Bias",
    compare="MCAS and Diffusion Bias", family="mcas")

ANNOTATORS = (EMBEDDINGS,)
INPUTS = (REFERENCE,)
