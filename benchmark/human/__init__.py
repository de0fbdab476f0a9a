"""Human labels: the answer values of each question type and what a task says about its
questions (questions; the questions themselves are the tasks'), the answer events (events), the
append-only answers file (answers_file) and its replay (replay), the items to label (items), the
qualification test (qualification), the annotation app (app, ``t2ibench annotate-ui``), and the
agreement statistics over the answers (``t2ibench agreement``); the paper-specific parts are
each task's ``human_validation``. ``label_dataset`` publishes a run's labels as a Hub dataset,
registered here as the dataset builder ``human_labels`` (``python -m dataset_builders.human_labels``)."""

from benchmark.registries import DatasetBuilderSpec, Registrations

REGISTRATIONS = Registrations(dataset_builders=(DatasetBuilderSpec(
    "human_labels", "Publish a run's human labels as a Hub dataset: one row per item (an image and a question) with "
    "every annotator's answer, the majority and the agreement, plus the raw answers, and a card with the instructions "
    "the annotators saw.", f"{__name__}.label_dataset"),))
