"""Score metadata of Generated Bias: Diffusion Bias and Bias Amplification (Generated Bias
Eq. 4-5), which the MCAS task computes from its components (see this folder's ``__init__``).

Declared here, registered from this folder's ``task.py`` (``REGISTRATIONS``), with the paper's
citation; the registries list the task folders in folder order and a folder's scores in the
order below.
"""

from __future__ import annotations

import math

from benchmark.scores.metadata import ScoreMetadata

# The MCAS suites these scores are computed over (the MCAS task computes them). Written out, not
# imported: the MCAS folder imports this one (its checks and headline), so this one imports nothing
# of it and the two folders depend one way.
MCAS_SUITES = ("mcas_targets", "mcas_attributes")

SCORES = (
    ScoreMetadata(
        name="diffusion_bias", display_name="Diffusion Bias",
        description="abs(abs(II) - abs(TT)): bias introduced by the diffusion "
                    "stage.",
        paper="diffusion_bias", min_value=0.0, max_value=2.0, lower_is_better=True, ideal=0.0, headline=True,
        absolute_value=True, spans=MCAS_SUITES),
    ScoreMetadata(
        name="bias_amplification", display_name="Bias Amplification",
        description="abs((ITP + ITA) / (2 TT)): above 1 the model "
                    "amplifies the text encoder's bias, below 1 it damps it; undefined when TT = 0.",
        paper="diffusion_bias", min_value=0.0, max_value=math.inf, lower_is_better=True, ideal=0.0,
        absolute_value=True, spans=MCAS_SUITES),
)
