"""The labelling app asks the tasks (Task.human_validation): answer options, instructions and
the wording of qualification questions come from the task of an item's suite, the generic
defaults otherwise; the agreement tables a task declares are listed in the report."""

from __future__ import annotations

import pytest

from benchmark.human import questions as Q
from benchmark.runner.report import human_agreement_tables
from benchmark.tasks import AgreementTable, HumanValidation, Task, get_task


def _task(name, **hv):
    return Task(name=name, family=name, papers=(name,), annotators={}, score=lambda ctx, suites: None,
                human_validation=HumanValidation(**hv) if hv else None)


def test_options_and_instructions_default_when_a_task_declares_none():
    plain = _task("plain")
    assert Q.options_for("attribute", plain) == ("yes", "no")
    assert Q.options_for("gender_single", None) == ("feminine", "masculine", "cannot identify")
    assert Q.instructions_for("attribute", plain, None) == Q.DEFAULT_INSTRUCTIONS
    with pytest.raises(ValueError, match="unknown question type"):
        Q.options_for("colour", plain)


def test_a_task_declares_its_options_and_instructions():
    own = _task("own", options={"gender_single": ("male", "female")}, instructions={"skin_tone": ("Look.",)})
    assert Q.options_for("gender_single", own) == ("male", "female")
    assert Q.instructions_for("skin_tone", None, own) == ("Look.",)
    bad = _task("bad", options={"attribute": ("maybe",)})
    with pytest.raises(ValueError, match="offers"):
        Q.options_for("attribute", bad)


def test_qualification_wording_prefers_the_suites_task_then_the_first_that_words_it():
    def first(qtype, key, identity, phrase, own):
        return f"first {key}" if qtype == "attribute" else None

    def second(qtype, key, identity, phrase, own):
        return f"second {key}" if own or qtype == "skin_tone" else None

    a, b = _task("a", qualification_question=first), _task("b", qualification_question=second)
    assert Q.qualification_wording("attribute", "hat", None, None, b, [a, b]) == ("second hat", b)
    assert Q.qualification_wording("attribute", "hat", None, None, None, [a, b]) == ("first hat", a)
    assert Q.qualification_wording("skin_tone", "", None, None, a, [a, b]) == ("second ", b)
    with pytest.raises(ValueError, match="no task words a gender_paired"):
        Q.qualification_wording("gender_paired", "left", None, None, None, [a, b])


def test_builtin_tasks_word_the_papers_qualification_questions():
    gep, dalleval, pst = (get_task(n) for n in ("gep", "dalleval", "pst"))
    tasks = [gep, dalleval, pst]
    assert Q.qualification_wording("attribute", "in a dress", None, None, None, tasks)[0] == \
        "Do you see a person in a dress?"
    assert Q.qualification_wording("attribute", "a suit", None, None, dalleval, tasks)[0] == \
        "Is the person wearing a suit?"
    assert Q.qualification_wording("gender_single", "", "nurse", None, None, tasks)[1] is pst
    assert Q.qualification_wording("gender_single", "", None, None, None, tasks)[1] is dalleval
    assert Q.qualification_wording("gender_single", "", "nurse", None, dalleval, tasks)[1] is dalleval
    assert Q.words_without_identity("gender_single", dalleval) and not Q.words_without_identity("gender_single", pst)
    assert Q.options_for("gender_single", dalleval) == ("male", "female", "cannot identify")


def test_the_report_lists_the_tasks_agreement_tables_after_the_attribute_tables():
    keys = [k for k, _ in human_agreement_tables()]
    assert keys == ["inter_annotator", "attribute_auc_summary", "gep_agreement", "gender_kappa", "skin_tone"]
    assert isinstance(get_task("gep").human_validation.tables[0], AgreementTable)
