"""Human labels: the answer values of each question type and what a task says about its
questions (questions; the questions themselves are the tasks'), the answer events (events), the
append-only answers file (answers_file) and its replay (replay), the items to label (items), the
qualification test (qualification), the annotation app (app, ``t2ibench annotate-ui``), and the
agreement statistics over the answers (``t2ibench agreement``); the paper-specific parts are
each task's ``human_validation``. ``label_dataset`` publishes a run's labels as a Hub dataset,
registered here as the dataset builder ``human_labels`` (``python -m dataset_builders.human_labels``).
``sample`` draws the calibration sample the app serves; ``correction_labels`` hands people's labels
of it to the score stage (registered as the human label source ``answers``), which corrects every
score with them (:mod:`benchmark.runner.human_correction`); ``plan`` says how many labels a
target interval needs (``t2ibench label-plan``)."""

from benchmark.registries import DatasetBuilderSpec, HumanLabelSourceSpec, Registrations

REGISTRATIONS = Registrations(dataset_builders=(DatasetBuilderSpec(
    "human_labels", "Publish a run's human labels as a Hub dataset: one row per item (an image and a question) with "
    "every annotator's answer, the majority and the agreement, plus the raw answers, and a card with the instructions "
    "the annotators saw.", f"{__name__}.label_dataset"),),
    human_label_sources=(HumanLabelSourceSpec(
        "answers", "The annotation app's answers (human_labels/answers.jsonl) to the calibration sample "
        "(human_labels/sample.json) or a census of a suite.", f"{__name__}.correction_labels"),))
