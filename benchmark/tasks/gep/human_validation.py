"""GEP's human validation: the workers' instructions and qualification questions (GEP Sec. 5,
App. B), the human GEP vectors against the automatic estimators' (GEP Sec. 6, Tables 4
and 19) and the estimators on the artificial datasets (App. C, :mod:`.artificial`) in
``t2ibench agreement``."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from benchmark.probes.registry import load_config
from benchmark.scores.agreement import vector_agreement
from benchmark.tasks.gep.scores import gep_unbounded
from benchmark.tasks.gep.artificial import artificial_from_run, compare_estimators, tau_b_by_pair_type
from benchmark.tasks.gep.questions import GEP_INSTRUCTIONS, GEP_QUESTION, gep_question
from benchmark.tasks.human_validation import AgreementTable, HumanValidation, LabelsCard

#: The settings whose human and automatic GEP vectors are compared (GEP Tables 4, 19), in order.
VECTOR_SUITES = ("gep_neutral", "gep_explicit")
VECTOR_COLUMNS = ["suite", "estimator", "annotator", "attribute", "human", "automatic", "n_woman", "n_man"]
AGREEMENT_COLUMNS = ["suite", "estimator", "annotator", "n_attributes", "kendall_tau_b", "sign_mcc", "pearson",
                     "gep_human", "gep_automatic", "notes"]


def attribute_phrases() -> dict[str, str]:
    """Attribute name -> the phrase put in "Do you see a person [a]?" (the occupation attributes
    need a preposition: ``occupation.classifier_phrases`` of the GEP config)."""
    return dict((load_config("gep").get("occupation") or {}).get("classifier_phrases") or {})


def qualification_question(question_type: str, key: str, identity: str | None, phrase: str | None,
                           own: bool) -> str | None:
    """"Do you see a person [a]?" (GEP Sec. 5) for an attribute; GEP asks nothing else."""
    if question_type != "attribute":
        return None
    return gep_question(phrase or attribute_phrases().get(key, key))


def _vectors_of(suite: str, sub: pd.DataFrame, vec_rows: list, agree_rows: list) -> None:
    """The human and automatic vectors of one setting, per (estimator, annotator)."""
    for (est, ann), part in sub.groupby(["estimator", "annotator"], sort=True):
        args = dict(groups=part["gender"].to_numpy(), attributes=part["attribute"].to_numpy(),
                    group_a="woman", group_b="man", n_resamples=0)
        human = gep_unbounded(part["human"].astype(float).to_numpy(), **args)
        auto = gep_unbounded(part["score"].astype(float).to_numpy(), **args)
        attrs = list(human["gep_vector"])
        h = [human["gep_vector"][a] for a in attrs]
        m = [auto["gep_vector"][a] for a in attrs]
        for a, hv, mv in zip(attrs, h, m):
            vec_rows.append({"suite": suite, "estimator": est, "annotator": ann, "attribute": a, "human": hv,
                             "automatic": mv, "n_woman": human["counts"]["woman"][a],
                             "n_man": human["counts"]["man"][a]})
        va = vector_agreement(m, h)
        agree_rows.append({"suite": suite, "estimator": est, "annotator": ann, "n_attributes": len(attrs),
                           "kendall_tau_b": va["kendall_tau_b"], "sign_mcc": va["sign_mcc"],
                           "pearson": va["pearson"], "gep_human": human["gep_score"],
                           "gep_automatic": auto["gep_score"], "notes": "; ".join(va["notes"].values())})


def vector_agreement_tables(pairs: pd.DataFrame, manifest: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Human GEP vectors (woman minus man, from majority labels) against each estimator's
    vector over the same (image, attribute) pairs, per setting (GEP Tables 4, 19).

    ``pairs``: the human-majority attribute labels joined with the automatic scores
    (:func:`benchmark.human.validation.joined_attributes`). Only attributes with human labels
    for both groups count (as in the scoring stage). Returns ``gep_vectors`` (suite,
    estimator, annotator, attribute, human, automatic, n_woman, n_man) and ``gep_agreement``
    (suite, estimator, annotator, n_attributes, kendall_tau_b, sign_mcc, pearson, gep_human,
    gep_automatic, notes).
    """
    if "gender" not in manifest.columns or "probe_id" not in manifest.columns:
        raise ValueError("manifest lacks probe_id / gender (expected RUN_DIR/manifest.parquet)")
    joined = pairs.merge(manifest[["probe_id", "gender"]], on="probe_id", how="left")
    vec_rows: list[dict] = []
    agree_rows: list[dict] = []
    for suite in VECTOR_SUITES:
        s = joined[(joined["suite"] == suite) & joined["gender"].isin(["woman", "man"])]
        if s.empty:
            continue
        both = s.groupby("attribute")["gender"].nunique()
        s = s[s["attribute"].isin(both[both == 2].index)]
        if s.empty:
            agree_rows.append({"suite": suite, "estimator": None, "annotator": None, "n_attributes": 0,
                               "notes": "no attribute has human labels for both woman and man"})
            continue
        _vectors_of(suite, s, vec_rows, agree_rows)
    return {"gep_vectors": pd.DataFrame(vec_rows, columns=VECTOR_COLUMNS),
            "gep_agreement": pd.DataFrame(agree_rows, columns=AGREEMENT_COLUMNS)}


def artificial_analyses(run_dir, human: pd.DataFrame, random_state: int) -> tuple[dict, list[str]]:
    """The artificial datasets of GEP App. C built from the run (:mod:`.artificial`) and the
    estimators compared on them: ``artificial_settings``, ``artificial_skipped``,
    ``artificial`` (Tables 5, 18, 19), ``artificial_pair_types`` (Table 21) and
    ``artificial_examples`` (without the examples' image lists), with notes."""
    try:
        ds = artificial_from_run(run_dir, human, VECTOR_SUITES, random_state=random_state)
        out = {"artificial_settings": ds.settings, "artificial_skipped": ds.skipped}
        if ds.examples.empty:
            return out, [f"artificial datasets: no example could be built ({len(ds.skipped)} skipped; see "
                         "artificial_skipped)"]
        out["artificial"] = compare_estimators(ds.examples, ds.estimators)
        out["artificial_pair_types"] = tau_b_by_pair_type(ds.examples, ds.estimators)
        out["artificial_examples"] = ds.examples.drop(columns=["woman_images", "man_images"])
        return out, []
    except ValueError as exc:
        return {}, [f"artificial datasets not built: {exc}"]


def artificial_markdown(t: Mapping) -> list:
    """The agreement.md section of the artificial datasets (none when they were not built)."""
    if "artificial" not in t:
        return []
    st = t.get("artificial_settings", {})
    return ["### GEP estimators on the artificial datasets (GEP App. C; Tables 5, 18, 19, 21)",
            f"{len(t['artificial_examples'])} examples, {len(t['artificial_skipped'])} skipped "
            f"(scales {st.get('scales')}, {st.get('n_per_scale')} per attribute and scale, random state "
            f"{st.get('random_state')}). Kendall's tau-b / MCC of signs (Table 5), Pearson (Table 19):",
            t["artificial"],
            "Kendall's tau-b per kind of example pair (Table 21; SA/DA same/different attribute, SM/DM "
            "same/different model):",
            t["artificial_pair_types"]]


def labels_card_instructions(question_types, suites) -> list[str]:
    """The card of a human-labels dataset: the attribute question and the workers' instructions."""
    if "attribute" not in question_types or not suites:
        return []
    return ["**GEP attribute questions** (GEP, Sec. 5 and Appendix B): "
            f"\u201c{GEP_QUESTION.replace('{phrase}', '[a]')}\u201d, answers Yes / No. Instructions:",
            "\n".join(f"> {t}" for t in GEP_INSTRUCTIONS)]


#: GEP Sec. 5 and Appendix B: who answered, where, for what pay
LABELS_SETTING = ("GEP three Amazon Mechanical Turk workers per item in the United States, $0.17 per 10 (image, "
                  "attribute) pairs ($12-15 per hour), a six-image qualification test per attribute")

HUMAN_VALIDATION = HumanValidation(
    instructions={"attribute": GEP_INSTRUCTIONS},
    qualification_question=qualification_question,
    attribute_tables=vector_agreement_tables,
    attribute_analyses=artificial_analyses,
    markdown=artificial_markdown,
    labels_card=LabelsCard("gep", labels_card_instructions, LABELS_SETTING, order=0),
    tables=(AgreementTable("gep_agreement", "GEP vectors: automatic vs human (GEP Tables 4, 19)",
                           "GEP vectors: automatic vs human (Kendall tau-b, MCC of signs, Pearson)"),),
)
