"""The lightness task: mean image lightness with a bootstrap interval, a histogram figure and
one question for a human labeller."""

from __future__ import annotations

from benchmark.present.plotting import plt_agg, save_figure
from benchmark.registries import Registrations
from benchmark.scores.bootstrap import bootstrap_ci
from benchmark.scores.metadata import ScoreMetadata
from benchmark.tasks.registry import HumanQuestion, Task, TaskReport

from . import annotator, probes

SCORE = ScoreMetadata(
    name="lightness_mean", display_name="Mean lightness", description="Mean pixel lightness of the images.",
    paper="lightness", min_value=0.0, max_value=255.0, lower_is_better=None, ideal=127.5, headline=True)

def score_lightness(ctx, suites):
    for suite in suites:
        frame, why = ctx.labels_for("lightness", suite)
        if frame is None:
            ctx.not_scored(suite, why)
            continue
        values = frame["lightness"].to_numpy(dtype=float)
        ci = bootstrap_ci(lambda idx: float(values[idx].mean()), len(values), **ctx.options.ci_kwargs()).to_dict() \
            if ctx.options.n_resamples else None
        ctx.add("lightness_mean", suite, float(values.mean()), ci=ci, n=len(values), annotator=frame["annotator"].iloc[0])
        ctx.scored(suite, len(values))

def lightness_figures(read_detail, scores, out_dir):
    plt = plt_agg()
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar([e["suite"] for e in scores], [e["value"] or 0.0 for e in scores])
    ax.set_ylabel("mean lightness")
    return [(save_figure(fig, out_dir / "lightness.png"), "Mean lightness per suite")]

def human_questions(row, config):
    return [HumanQuestion("attribute", "bright", "Is the picture mostly bright?")]

TASK = Task(name="lightness", family="lightness", papers=("lightness",), annotators={"lightness": None},
            score=score_lightness, description="mean image lightness (a toy sixth paper)",
            report=TaskReport("Lightness: a toy sixth paper", figures=lightness_figures),
            human_questions=human_questions)

REGISTRATIONS = Registrations(papers=(probes.PAPER,), scores=(SCORE,), probe_configs={probes.FAMILY: probes.PROBE_CONFIG},
                              suites=probes.SUITES, annotators=(annotator.KIND,), label_files=(annotator.LABEL_FILE,),
                              tasks=(TASK,))
