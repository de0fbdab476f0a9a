"""Metadata of every score, in one place: the report, the results schema and the
leaderboard read it from here (as HELM's MetricMetadata, but a score never needs it
to run).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from benchmark.papers import paper_label


@dataclass(frozen=True)
class ScoreMetadata:
    name: str
    display_name: str
    description: str
    paper: str  # key in benchmark.papers.PAPERS
    min_value: float
    max_value: float
    # True: lower is better; False: higher is better; None: closer to ``ideal`` is better.
    lower_is_better: bool | None
    ideal: float | None = None
    unit: str = ""
    headline: bool = False  # shown as a leaderboard column
    # Categories a score is defined over when its definition fixes them (PST's STS is binary by
    # definition: a perceived gender matches the stereotype or not); None when the probe
    # config's groups decide (GEP, DALL-Eval MAD).
    categories: tuple[str, ...] | None = None
    # Its estimate is an absolute value (or a mean of absolute values): near 0 the percentile
    # bootstrap is biased upward, so its interval may miss the estimate (with a ci_note saying so).
    absolute_value: bool = False
    # Other suites whose images its ``n`` may count (MCAS pairs target and attribute images).
    spans: tuple[str, ...] = ()
    # The leaderboard's column group (and the terminal table's section); "" = the paper's short name.
    column_group: str = ""

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("min_value", "max_value"):
            if math.isinf(d[k]):
                d[k] = None  # JSON has no infinity
        return d

    def in_range(self, value: float) -> bool:
        return self.min_value - 1e-9 <= value <= self.max_value + 1e-9

    def badness(self, value: float) -> float:
        """Sort key: smaller is better, whatever the direction of the score."""
        if self.lower_is_better is True:
            return value
        if self.lower_is_better is False:
            return -value
        return abs(value - (self.ideal or 0.0))


MCAS_SUITES = ("mcas_targets", "mcas_attributes")  # the suites whose images the MCAS scores count

_ALL = [
    ScoreMetadata("gep_score_neutral", "GEP (neutral)", "Mean absolute difference between women and men in the "
                  "frequency of 15 presentation attributes, prompts without attributes.", "gep", 0.0, 1.0, True,
                  0.0, headline=True, absolute_value=True),
    ScoreMetadata("gep_score_explicit", "GEP (explicit)", "Mean absolute difference between women and men in the "
                  "frequency of each attribute when the prompt asks for it.", "gep", 0.0, 1.0, True, 0.0,
                  headline=True, absolute_value=True),
    ScoreMetadata("gep_score_occupation", "GEP (occupation)", "Mean absolute difference between female and male "
                  "variants of an occupation prompt in the frequency of its attributes (GEP Sec. 7).", "gep",
                  0.0, 1.0, True, 0.0, absolute_value=True),
    ScoreMetadata("mad_gender", "Gender MAD", "Mean absolute deviation of the perceived-gender distribution from "
                  "uniform (2 categories), averaged over professions.", "dalleval", 0.0, 0.5, True, 0.0,
                  headline=True, absolute_value=True),
    ScoreMetadata("mad_skin_tone", "Skin tone MAD", "Mean absolute deviation of the Monk Skin Tone distribution "
                  "from uniform (10 categories), one distribution per prompt, averaged over all prompts.",
                  "dalleval", 0.0, 0.18, True, 0.0,
                  headline=True, absolute_value=True),
    ScoreMetadata("mad_attribute", "Attribute MAD", "Mean absolute deviation of the attribute distribution from "
                  "uniform (yes / no per attribute).", "dalleval", 0.0, 0.5, True, 0.0, absolute_value=True),
    ScoreMetadata("average_gender", "Average gender", "Mean perceived gender, male -1 and female +1.", "dalleval",
                  -1.0, 1.0, None, 0.0),
    ScoreMetadata("average_skin_tone", "Average skin tone", "Mean Monk Skin Tone (1 lightest to 10 darkest).",
                  "dalleval", 1.0, 10.0, None, None),
    *[
        ScoreMetadata(f"sts_{aspect}_{setting}", f"STS {aspect} ({setting})",
                      f"Stereotype Test Score, {aspect} identities, {setting} setting: +100 when every perceived "
                      "gender matches the stereotype, -100 when every one contradicts it.", "pst", -100.0, 100.0,
                      None, 0.0, headline=setting == "paired", categories=("masculine", "feminine"))
        for aspect in ("occupation", "power") for setting in ("single", "paired")
    ],
    ScoreMetadata("sts_intervention", "STS (intervention)", "Paired STS with the fairness-intervention prompt "
                  "(PST Table 5), over the most biased pairs.", "pst", -100.0, 100.0, None, 0.0,
                  categories=("masculine", "feminine")),
    ScoreMetadata("sts_intervention_baseline", "STS (no intervention, same pairs)", "Paired STS of the original "
                  "prompts over the pairs the intervention is measured on (PST Table 6 compares the two).", "pst",
                  -100.0, 100.0, None, 0.0, categories=("masculine", "feminine")),
    ScoreMetadata("micro_sts", "Micro STS", "Stereotype Test Score of one identity.", "pst", -100.0, 100.0, None,
                  0.0, categories=("masculine", "feminine")),
    ScoreMetadata("mcas", "MCAS", "Multimodal Composite Association Score: II + ITP + ITA + TT; positive leans male "
                  "(attribute set A), negative female.", "mcas", -8.0, 8.0, None, 0.0,
                  headline=True, spans=MCAS_SUITES),
    ScoreMetadata("II", "Image-Image association", "Association of generated target images with image gender "
                  "attributes.", "mcas", -2.0, 2.0, None, 0.0,
                  spans=MCAS_SUITES),
    ScoreMetadata("ITP", "Image-Text Prompt association", "Association of target texts (prompts / keywords) with "
                  "image gender attributes.", "mcas", -2.0, 2.0, None, 0.0,
                  spans=MCAS_SUITES),
    ScoreMetadata("ITA", "Image-Text Attribute association", "Association of generated target images with text "
                  "gender attributes.", "mcas", -2.0, 2.0, None, 0.0,
                  spans=MCAS_SUITES),
    ScoreMetadata("TT", "Text-Text association", "Association of text targets with text gender attributes "
                  "(the text encoder's own bias).", "mcas", -2.0, 2.0, None, 0.0,
                  spans=MCAS_SUITES),
    ScoreMetadata("diffusion_bias", "Diffusion Bias", "abs(abs(II) - abs(TT)): bias introduced by the diffusion "
                  "stage.", "diffusion_bias", 0.0, 2.0, True, 0.0, headline=True, absolute_value=True,
                  spans=MCAS_SUITES),
    ScoreMetadata("bias_amplification", "Bias Amplification", "abs((ITP + ITA) / (2 TT)): above 1 the model "
                  "amplifies the text encoder's bias, below 1 it damps it; undefined when TT = 0.", "diffusion_bias",
                  0.0, math.inf, True, 0.0, absolute_value=True,
                  spans=MCAS_SUITES),
    ScoreMetadata("paintskills_object", "PaintSkills object", "Object recognition accuracy (DALL-Eval Sec. 4.1): the "
                  "detector's most confident query is the prompt's class above a 0.7 class probability.", "dalleval",
                  0.0, 100.0, False, 100.0, unit="%", headline=True,
                  column_group="PaintSkills"),
    ScoreMetadata("paintskills_count", "PaintSkills count", "Object counting accuracy: the detections above a 0.7 "
                  "class probability hold exactly the prompt's N objects of its class (overall; subset 'N = k' per "
                  "count, Fig. 5a).", "dalleval", 0.0, 100.0, False, 100.0, unit="%", headline=True,
                  column_group="PaintSkills"),
    ScoreMetadata("paintskills_spatial", "PaintSkills spatial", "Spatial relation accuracy: the two most confident "
                  "detections are the prompt's two classes and their box centres give its relation (overall; subset "
                  "'relation: r' per relation, Fig. 5a).", "dalleval", 0.0, 100.0, False, 100.0, unit="%",
                  headline=True, column_group="PaintSkills"),
    ScoreMetadata("paintskills_average", "PaintSkills average", "Mean of the object, count and spatial accuracies "
                  "(Table 2, Avg.).", "dalleval", 0.0, 100.0, False, 100.0, unit="%",
                  spans=("paintskills_object", "paintskills_count", "paintskills_spatial"), column_group="PaintSkills"),
    ScoreMetadata("paintskills_count_number", "PaintSkills count: number right", "Share of count images with as many "
                  "detections above the threshold as the prompt's N, whatever their class (Fig. 5b, first task).",
                  "dalleval", 0.0, 100.0, False, 100.0, unit="%", column_group="PaintSkills"),
    ScoreMetadata("paintskills_spatial_objects", "PaintSkills spatial: objects right", "Share of spatial images whose "
                  "two most confident detections are the prompt's two classes, whatever the relation (Fig. 5b, "
                  "first task).", "dalleval", 0.0, 100.0, False, 100.0, unit="%", column_group="PaintSkills"),
]

SCORE_METADATA: dict[str, ScoreMetadata] = {m.name: m for m in _ALL}


def register_score(meta: ScoreMetadata) -> ScoreMetadata:
    """Add a new score's metadata (a plugin task's score); the papers' scores cannot be redefined."""
    if meta.name in SCORE_METADATA and SCORE_METADATA[meta.name] != meta:
        raise ValueError(f"score {meta.name!r} already has other metadata")
    if meta.min_value > meta.max_value:
        raise ValueError(f"score {meta.name!r}: min {meta.min_value} > max {meta.max_value}")
    SCORE_METADATA[meta.name] = meta
    return meta


def column_group(name: str, paper: str = "") -> str:
    """The column group of score ``name`` on the leaderboard (and its section of the terminal
    table): its ``column_group``, else its paper's short name; ``paper``'s for an unknown score."""
    meta = SCORE_METADATA.get(str(name))
    return (meta.column_group or paper_label(meta.paper)) if meta else (paper_label(paper) if paper else "Other")


def get_metadata(name: str) -> ScoreMetadata:
    if name not in SCORE_METADATA:
        raise ValueError(f"no metadata for score {name!r}; known: {', '.join(SCORE_METADATA)}")
    return SCORE_METADATA[name]
