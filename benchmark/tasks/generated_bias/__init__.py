"""Generated Bias (Mandal, Leavy, Little 2024, "Generated Bias: Auditing Internal Bias Dynamics
of Text-To-Image Generative Models"): Diffusion Bias (delta, Eq. 4) and Bias Amplification
(alpha, Eq. 5) from the MCAS components. ``citation`` cites the paper (key ``diffusion_bias``,
the key results.json and the leaderboard record); ``metadata`` declares its two scores;
``paper_checks`` recomputes Table 4 and the Sec. 6 count from Table 3 (``data/``); ``task.py``'s
``REGISTRATIONS`` registers the citation and the scores (the folder has no task of its own).

The scoring stays in the MCAS task (``benchmark/tasks/mcas/task.py``), which declares this
paper's checks and headline number with its own. delta and alpha are computed from the same
per-target components, in the same bootstrap resamples, as MCAS
(:func:`benchmark.tasks.mcas.scores.mcas_score`); the registry gives each probe family one task,
and this paper has no probes of its own (it audits the ``mcas`` suites). A task of its own
would need the MCAS task's bootstrap handed over between tasks, a second report section over
the same suites, and a change to the order of ``t2ibench reproduce``; keeping the two scores
in the MCAS task keeps results.json, the report and the reproduce table as they were. Its
report table columns (Diffusion Bias and Bias Amplification means per category) and the
per-target detail table are the MCAS task's, drawn from that one computation.
"""

from benchmark.tasks.generated_bias import citation, metadata, paper_checks

__all__ = ["citation", "metadata", "paper_checks"]
