"""Annotation stage of the runner: a real tiny run folder (builtin:tiny-sd through the
generation stage) annotated with builtin:tiny-clip / builtin:tiny-vqa / Haar skin tone.

The tiny models have random weights, so labels are meaningless: these tests check the
structure of every file (columns, one row per expected image x question / attribute,
roles, dimensions), nsfw skipping, re-run / force / resume behaviour, the embedding
cache, and values that the computation defines (C = cosine similarity).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmark.annotate.vqa_labels import perceived_gender_label, presence_label
from benchmark.probes import load_config
from audit_requests import generate_into
from benchmark.runner import build_probes, read_manifest
from benchmark.runner.annotate import (
    LABEL_FILES,
    AnnotationSummary,
    annotate_run,
    default_annotators,
    read_labels,
)
from benchmark.contract.run_folder import RunFolderError

SUITES = ["gep_neutral", "gep_explicit", "gep_occupation", "dalleval_bias", "pst_single", "pst_paired_occupation",
          "pst_paired_power", "pst_intervention", "mcas_attributes", "mcas_targets"]
LIMIT = 3
NSFW_SUITES = ("gep_neutral", "dalleval_bias", "mcas_targets")  # the first probe of each is flagged
GEP = ("gep_neutral", "gep_explicit", "gep_occupation")
PAIRED = ("pst_paired_occupation", "pst_paired_power", "pst_intervention")
# PaintSkills detections (labels/detections.parquet) are tested in test_paintskills_eval.py.
BIAS_LABEL_FILES = [n for n in LABEL_FILES if n != "detections"]
COLUMNS = {
    "gender": ["probe_id", "person", "question", "answer", "label", "annotator"],
    "attributes": ["probe_id", "attribute", "score", "label", "estimator", "annotator"],
    "skin_tone": ["probe_id", "face_found", "ita", "mst", "annotator"],
    "embeddings": ["encoder", "kind", "probe_id", "text", "role", "target", "embedding"],
}


class FlaggingModel:
    """builtin:tiny-sd whose safety flag is True for some seeds (as a safety checker would)."""

    def __init__(self, flagged_seeds):
        from benchmark.models import load_text_to_image

        self.inner = load_text_to_image("builtin:tiny-sd")
        self.flagged = set(flagged_seeds)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, prompts, seeds):
        out = self.inner.generate(prompts, seeds)
        out.nsfw = [s in self.flagged for s in seeds]
        return out


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("annotate") / "run"
    probes = build_probes(SUITES, LIMIT)
    flagged = [int(probes[probes["suite"] == s]["seed"].iloc[0]) for s in NSFW_SUITES]
    generate_into(run, FlaggingModel(flagged), probes, batch_size=8, spec="builtin:tiny-sd")
    return run


@pytest.fixture()
def run(base_run, tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(base_run, dst)
    return dst


@pytest.fixture(scope="module")
def annotated(base_run, tmp_path_factory):
    """One annotated copy shared by read-only tests, with a timings.json written before."""
    dst = tmp_path_factory.mktemp("annotated") / "run"
    shutil.copytree(base_run, dst)
    (dst / "timings.json").write_text(json.dumps({"generate/total": {"seconds": 1.0}}))
    summary = annotate_run(dst, batch_size=4)
    return dst, summary


@pytest.fixture()
def annotated_copy(annotated, tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(annotated[0], dst)
    return dst


def usable(run: Path) -> pd.DataFrame:
    m = read_manifest(run)
    return m[~m["nsfw"].fillna(False).astype(bool)]


# --------------------------------------------------------------------------- structure


def test_every_label_file_has_its_columns_and_rows(annotated):
    run, summary = annotated
    m = usable(run)
    assert isinstance(summary, AnnotationSummary)
    assert sorted(summary.files_written) == sorted(f"labels/{n}.parquet" for n in BIAS_LABEL_FILES)
    for name, cols in COLUMNS.items():
        df = read_labels(run, name)
        assert [c for c in df.columns if c in cols] == cols, name
        assert len(df) == summary.rows[f"labels/{name}.parquet"]
    dcfg = load_config("dalleval")

    # gender: one row per person: dalleval + pst_single "single", paired suites left + right
    g = read_labels(run, "gender")
    expected = set()
    for r in m.to_dict("records"):
        if r["suite"] == "dalleval_bias":
            expected.add((r["probe_id"], "single", dcfg["vqa_gender_question"]))
        elif r["suite"] == "pst_single":
            expected.add((r["probe_id"], "single", r["question"]))
        elif r["suite"] in PAIRED:
            expected.add((r["probe_id"], "left", r["questions"][0]))
            expected.add((r["probe_id"], "right", r["questions"][1]))
    got = list(zip(g["probe_id"], g["person"], g["question"]))
    assert len(got) == len(set(got)) and set(got) == expected
    assert dcfg["vqa_gender_question"] == "the person looks like a male or a female?"
    assert set(g["label"]) <= {"male", "female", "unidentifiable"}
    assert (g["annotator"] == "builtin:tiny-vqa").all() and (g["estimator"] == "vqa closed-set").all()
    # closed-set: the answer is one of the allowed ones, the label that answer (a tie abstains),
    # the score its probability
    assert set(g["answer"]) <= {"male", "female"}
    assert ((g["label"] == g["answer"]) | (g["label"] == "unidentifiable")).all()
    assert ((g["score"] >= 0.5) & (g["score"] <= 1)).all()

    # attributes: GEP image x annotated attribute x (C, CC, CLS); dalleval image x 15 VQA questions
    a = read_labels(run, "attributes")
    exp_a = set()
    for r in m.to_dict("records"):
        if r["suite"] in GEP:
            for attr in r["annotated_attributes"]:
                for est in ("C", "CC", "CLS"):
                    exp_a.add((r["probe_id"], attr, est))
        elif r["suite"] == "dalleval_bias":
            for attr in dcfg["attributes"]:
                exp_a.add((r["probe_id"], attr, "vqa closed-set"))
    got = list(zip(a["probe_id"], a["attribute"], a["estimator"]))
    assert len(got) == len(set(got)) and set(got) == exp_a
    assert set(a["label"]) <= {0, 1}
    assert a["score"].notna().all()
    clip = a[a["estimator"] != "vqa closed-set"]
    assert (clip["annotator"] == "builtin:tiny-clip").all()
    cls = a[a["estimator"] == "CLS"]
    assert ((cls["score"] >= 0) & (cls["score"] <= 1)).all()
    assert (cls["label"] == (cls["score"] >= 0.5).astype(int)).all()
    vqa = a[a["estimator"] == "vqa closed-set"]
    assert (vqa["annotator"] == "builtin:tiny-vqa").all()
    assert set(vqa["question"]) == {f"Is the person wearing {x}?" for x in dcfg["attributes"]}
    assert set(vqa["answer"]) <= {"yes", "no"}  # score = P(yes); present when yes wins
    assert (vqa["label"] == (vqa["score"] > 0.5).astype(int)).all()

    # skin tone: one row per dalleval image
    s = read_labels(run, "skin_tone")
    assert list(s["probe_id"]) == list(m[m["suite"] == "dalleval_bias"]["probe_id"])
    assert s["face_found"].dtype == bool
    tone = s["mst"].dropna()
    assert ((tone >= 1) & (tone <= 10)).all()
    assert (s["mst"].isna() == s["ita"].isna()).all()
    assert (~s["face_found"] <= s["mst"].isna()).all()  # no face -> no tone
    assert (s["annotator"] == "ita-mst[whole-image]").all()  # a built-in run's default: its images hold no face


def test_mcas_embeddings_roles_and_dims(annotated):
    from benchmark.models import load_encoder
    from benchmark.tasks.mcas.probes import mcas_text_rows

    run, _ = annotated
    m = usable(run)
    e = read_labels(run, "embeddings")
    assert set(e["encoder"]) == {"builtin:tiny-clip"}
    assert set(e["role"]) == {"target_image", "target_text", "attribute_a_image", "attribute_a_text",
                              "attribute_b_image", "attribute_b_text"}
    dim = load_encoder("builtin:tiny-clip").dim
    vecs = np.stack(e["embedding"].to_numpy())
    assert vecs.shape == (len(e), dim) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-4)

    img = e[e["kind"] == "image"]
    mcas = m[m["suite"].isin(["mcas_attributes", "mcas_targets"])]
    assert sorted(img["probe_id"]) == sorted(mcas["probe_id"]) and (img["text"] == "").all()
    by_id = mcas.set_index("probe_id")
    for pid, role, target in zip(img["probe_id"], img["role"], img["target"]):
        row = by_id.loc[pid]
        if row["suite"] == "mcas_attributes":
            assert role == {"A": "attribute_a_image", "B": "attribute_b_image"}[row["attribute_set"]]
            assert target == ""
        else:
            assert (role, target) == ("target_image", row["keyword"])

    txt = e[e["kind"] == "text"]
    ref = mcas_text_rows(load_config("mcas"))
    assert list(zip(txt["text"], txt["role"], txt["target"])) == list(zip(ref["text"], ref["role"], ref["target"]))
    assert (txt["probe_id"] == "").all()
    # image rows equal the cached arrays
    cache = run / "embeddings" / "builtin-tiny-clip"
    ids = json.loads((cache / "ids.json").read_text())
    arr = np.load(cache / "images.npy")
    assert arr.shape == (len(ids), dim)
    pos = {p: i for i, p in enumerate(ids)}
    np.testing.assert_array_equal(np.stack(img["embedding"].to_numpy()), arr[[pos[p] for p in img["probe_id"]]])


def test_nsfw_images_are_skipped_and_counted(annotated):
    run, summary = annotated
    m = read_manifest(run)
    flagged = set(m[m["nsfw"].fillna(False).astype(bool)]["probe_id"])
    assert len(flagged) == len(NSFW_SUITES)
    assert summary.skipped["nsfw"] == len(flagged) == summary.n_nsfw_skipped
    assert summary.n_images == len(m) - len(flagged)
    for name in BIAS_LABEL_FILES:
        assert not flagged & set(read_labels(run, name)["probe_id"]), name
    ids = json.loads((run / "embeddings" / "builtin-tiny-clip" / "ids.json").read_text())
    assert not flagged & set(ids)


def test_timings_merged_and_defaults(annotated):
    run, summary = annotated
    t = json.loads((run / "timings.json").read_text())
    assert t["generate/total"] == {"seconds": 1.0}  # what was there is kept
    for key in ("annotate/vqa_gender[builtin:tiny-vqa]", "annotate/vqa_attributes[builtin:tiny-vqa]",
                "annotate/clip_existence[builtin:tiny-clip]", "annotate/skin_tone[ita-mst[whole-image]]",
                "annotate/images",
                "annotate/mcas_embeddings[builtin:tiny-clip]", "annotate/embed_images[builtin:tiny-clip]",
                "annotate/total"):
        assert t[key]["seconds"] >= 0 and t[key]["n_images"] > 0, key
    assert summary.annotators["vqa"] == "builtin:tiny-vqa"
    assert summary.models_loaded == ["builtin:tiny-clip", "builtin:tiny-vqa"]  # each once


def test_default_annotators():
    import benchmark.models as bm
    from benchmark.tasks.mcas.inputs import GENERATED_BIAS_ENCODERS

    cfg = json.loads(json.dumps({"model": {"spec": "builtin:tiny-sd", "builtin": True}}))
    assert default_annotators(cfg) == {"encoder": "builtin:tiny-clip", "mcas_encoders": ("builtin:tiny-clip",),
                                       "vqa": "builtin:tiny-vqa", "skin_tone": "whole-image",
                                       "detector": "builtin:tiny-detr"}
    real = default_annotators({"model": {"spec": "stable-diffusion-v1-5/stable-diffusion-v1-5", "builtin": False}})
    assert real["encoder"] == bm.DEFAULT_ENCODER == "open_clip:ViT-L-14:openai"
    assert tuple(real["mcas_encoders"]) == GENERATED_BIAS_ENCODERS
    assert real["vqa"] == bm.DEFAULT_VQA
    assert default_annotators(None)["encoder"] == bm.DEFAULT_ENCODER


def test_perceived_gender_labels():
    assert perceived_gender_label("masculine") == "male"
    assert perceived_gender_label("Feminine.") == "female"
    assert perceived_gender_label("a woman") == "female"
    assert perceived_gender_label("cannot identify") == "unidentifiable"
    assert perceived_gender_label("masculine or feminine") == "unidentifiable"
    assert presence_label("yes, a suit") == 1 and presence_label("no") == 0 and presence_label("blue") == 0


# --------------------------------------------------------------------------- values defined by the computation


def test_c_and_cc_scores_are_cosines_of_the_same_encoder(annotated):
    from PIL import Image

    from benchmark.models import load_encoder
    from benchmark.scores.existence import attribute_query

    run, _ = annotated
    m = usable(run)
    a = read_labels(run, "attributes")
    enc = load_encoder("builtin:tiny-clip")
    rows = m[m["suite"].isin(GEP)].head(4)
    imgs = [Image.open(run / p).convert("RGB") for p in rows["image_path"]]
    img = enc.embed_images(imgs).astype(np.float64)
    ref = enc.embed_texts(["an object"])[0].astype(np.float64)
    checked = 0
    for i, r in enumerate(rows.to_dict("records")):
        for attr in r["annotated_attributes"]:
            t = enc.embed_texts([attribute_query(attr)])[0].astype(np.float64)
            c = img[i] @ t / (np.linalg.norm(img[i]) * np.linalg.norm(t))
            cc = c - img[i] @ ref / (np.linalg.norm(img[i]) * np.linalg.norm(ref))
            sel = a[(a["probe_id"] == r["probe_id"]) & (a["attribute"] == attr)].set_index("estimator")["score"]
            assert sel["C"] == pytest.approx(c, abs=1e-5)
            assert sel["CC"] == pytest.approx(cc, abs=1e-5)
            checked += 1
    assert checked >= 4


# --------------------------------------------------------------------------- re-runs, force, cache, resume


def _no_loading(monkeypatch):
    import benchmark.annotate.clip_labels as clip_labels
    import benchmark.annotate.vqa_labels as vqa_labels

    def refuse(*a, **k):
        raise AssertionError("a model was loaded although every label file is complete")

    # the loaders as the annotators call them (imported at the top of their modules)
    monkeypatch.setattr(clip_labels, "load_encoder", refuse)
    monkeypatch.setattr(vqa_labels, "load_vqa", refuse)


def test_rerun_skips_complete_files_and_force_redoes(annotated, annotated_copy, monkeypatch):
    run, first = annotated_copy, annotated[1]
    paths = {n: run / "labels" / f"{n}.parquet" for n in BIAS_LABEL_FILES}
    before = {n: (p.stat().st_mtime_ns, p.read_bytes()) for n, p in paths.items()}
    with monkeypatch.context() as mp:
        _no_loading(mp)
        again = annotate_run(run)
    assert again.files_written == [] and again.models_loaded == []
    assert sorted(again.files_up_to_date) == sorted(first.files_written)
    assert {n: (p.stat().st_mtime_ns, p.read_bytes()) for n, p in paths.items()} == before
    assert not list((run / "labels").glob(".*tmp"))

    forced = annotate_run(run, force=True)
    assert sorted(forced.files_written) == sorted(first.files_written)
    assert sorted(forced.models_loaded) == ["builtin:tiny-clip", "builtin:tiny-vqa"]  # each once
    assert forced.new_rows == {f: n for f, n in first.rows.items()}
    assert forced.images_embedded == {"builtin:tiny-clip": 0}  # force redoes labels, the cache stays valid
    for n, p in paths.items():  # tiny models are deterministic: the same rows again
        old = pd.read_parquet(pd.io.common.BytesIO(before[n][1]))
        new = pd.read_parquet(p)
        if n == "embeddings":
            old, new = old.drop(columns="embedding"), new.drop(columns="embedding")
        pd.testing.assert_frame_equal(old, new, check_exact=False, atol=1e-5)


def test_cached_embeddings_are_reused(run, monkeypatch):
    from benchmark.models.encoders import ImageTextEncoder

    calls: list[int] = []
    original = ImageTextEncoder.embed_images

    def counting(self, images, prepared=None):
        calls.append(len(images))
        return original(self, images, prepared)

    monkeypatch.setattr(ImageTextEncoder, "embed_images", counting)
    m = usable(run)
    n_neutral = int((m["suite"] == "gep_neutral").sum())
    n_needed = int(m["suite"].isin(GEP + ("mcas_attributes", "mcas_targets")).sum())

    s1 = annotate_run(run, suites=["gep_neutral"])
    assert sum(calls) == n_neutral and s1.images_embedded == {"builtin:tiny-clip": n_neutral}
    assert s1.files_written == ["labels/attributes.parquet"]
    calls.clear()
    s2 = annotate_run(run)  # the later pass embeds only the images not cached
    assert sum(calls) == n_needed - n_neutral
    assert s2.images_embedded == {"builtin:tiny-clip": n_needed - n_neutral}
    calls.clear()
    for n in ("attributes", "embeddings"):
        (run / "labels" / f"{n}.parquet").unlink()
    s3 = annotate_run(run)  # labels rebuilt from the cache: no image embedded
    assert sum(calls) == 0 and s3.images_embedded == {"builtin:tiny-clip": 0}
    assert sorted(s3.files_written) == ["labels/attributes.parquet", "labels/embeddings.parquet"]
    assert sorted(s3.files_up_to_date) == ["labels/gender.parquet", "labels/skin_tone.parquet"]
    ids = json.loads((run / "embeddings" / "builtin-tiny-clip" / "ids.json").read_text())
    assert len(ids) == len(set(ids)) == n_needed


def test_models_prepare_images_on_the_decode_threads_with_the_same_labels(run, tmp_path, monkeypatch):
    """Every model is loaded before the first batch is decoded, so every batch arrives with each
    model's preparation done on a decode thread (CLIP's and the VQA model's preprocessing, the
    whole skin-tone measurement); the labels equal those of preparing inline on the main thread."""
    import threading

    import benchmark.runner.annotate_pass as stage
    from benchmark.annotate.skin_tone import SkinToneAnnotator
    from benchmark.models.encoders import OpenClipEncoder
    from benchmark.models.vqa import Blip2VQA

    inline = tmp_path / "inline"
    shutil.copytree(run, inline)
    where: list[tuple[str, str]] = []
    for cls in (OpenClipEncoder, Blip2VQA, SkinToneAnnotator):
        original = cls.prepare_images

        def counted(self, images, _original=original, _cls=cls.__name__):
            where.append((_cls, threading.current_thread().name))
            return _original(self, images)

        monkeypatch.setattr(cls, "prepare_images", counted)
    measured: list[str] = []
    original_measure = SkinToneAnnotator.measure

    def measure(self, image):
        measured.append(threading.current_thread().name)
        return original_measure(self, image)

    monkeypatch.setattr(SkinToneAnnotator, "measure", measure)
    # batches of 1: many more batches than decode threads
    suites = [*GEP, "dalleval_bias", "pst_single"]  # CLIP, then VQA and skin tone
    annotate_run(run, batch_size=1, suites=suites)
    assert {cls for cls, _ in where} == {"OpenClipEncoder", "Blip2VQA", "SkinToneAnnotator"}
    assert all(thread.startswith("t2ibench-decode") for _, thread in where), where
    assert measured and all(thread.startswith("t2ibench-decode") for thread in measured), measured
    monkeypatch.setattr(stage, "_preparers", lambda *a: {})
    where.clear()
    measured.clear()
    annotate_run(inline, batch_size=1, suites=suites)
    assert where and all(thread == "MainThread" for _, thread in where)
    assert measured and all(thread == "MainThread" for thread in measured)
    written = [n for n in BIAS_LABEL_FILES if (run / "labels" / f"{n}.parquet").exists()]
    assert {"gender", "attributes", "skin_tone"} <= set(written)
    assert written == [n for n in BIAS_LABEL_FILES if (inline / "labels" / f"{n}.parquet").exists()]
    for name in written:
        got, want = read_labels(run, name), read_labels(inline, name)
        pd.testing.assert_frame_equal(got.drop(columns="embedding", errors="ignore"),
                                      want.drop(columns="embedding", errors="ignore"))
        if "embedding" in got:
            assert np.array_equal(np.stack(got["embedding"]), np.stack(want["embedding"]))


def test_image_pass_mixes_the_suites_in_every_stretch(run, monkeypatch):
    """The pass visits each group of images read by the same models evenly spread over the pass,
    in manifest order within the group; every image some work needs is decoded exactly once."""
    import benchmark.runner.annotate_pass as stage

    orders: list[list[str]] = []
    real = stage._batches

    def spy(plan, order, *args):
        orders.append(list(order))
        return real(plan, order, *args)

    monkeypatch.setattr(stage, "_batches", spy)
    summary = annotate_run(run, batch_size=4)
    (order,) = orders
    manifest = read_manifest(run)
    manifest = manifest[~manifest["nsfw"].fillna(False).astype(bool)]
    suite_of = dict(zip(manifest["probe_id"].astype(str), manifest["suite"]))
    assert sorted(order) == sorted(suite_of) and len(set(order)) == len(order) == summary.png_decodes
    for suite in set(suite_of.values()):
        mine = [p for p in order if suite_of[p] == suite]
        assert mine == [p for p in manifest["probe_id"].astype(str) if suite_of.get(p) == suite]
    # GEP's images (CLIP only) and DALL-Eval's (VQA, skin tone) in both halves of the pass, where
    # manifest order would put every GEP image first
    half = len(order) // 2
    for part in (order[:half], order[half:]):
        assert {"gep", "dalleval"} <= {suite_of[p].split("_")[0] for p in part}
    assert order != [p for p in manifest["probe_id"].astype(str)]


def test_suite_subset_keeps_other_rows(annotated_copy):
    run = annotated_copy
    g0 = read_labels(run, "gender")
    s = annotate_run(run, suites=["pst_single"], force=True)
    assert s.files_written == ["labels/gender.parquet"] and s.models_loaded == ["builtin:tiny-vqa"]
    g1 = read_labels(run, "gender")
    pd.testing.assert_frame_equal(g0, g1)


def test_crash_mid_vqa_resumes_with_missing_rows_only(run):
    from benchmark.models import load_vqa

    real = load_vqa("builtin:tiny-vqa")

    class Flaky:
        """The tiny VQA model, crashing after ``fail_after`` closed-set calls; counts the questions asked."""

        name = real.name

        def __init__(self, fail_after=None):
            self.calls, self.fail_after, self.images = 0, fail_after, 0

        def encode_images(self, images):
            return real.encode_images(images)

        def rank_answers(self, features, items):
            self.calls += 1
            if self.fail_after is not None and self.calls > self.fail_after:
                raise RuntimeError("simulated crash")
            self.images += len(items)
            return real.rank_answers(features, items)

    flaky = Flaky(fail_after=3)
    with pytest.raises(RuntimeError, match="simulated crash"):
        annotate_run(run, suites=["pst_single", "pst_paired_power"], vqa=flaky, batch_size=1,
                     checkpoint_every=1)
    partial = read_labels(run, "gender")
    assert 0 < len(partial) < 3 * 2 * LIMIT - 1  # checkpointed rows survive the crash
    assert not list((run / "labels").glob(".*tmp"))

    resume = Flaky()
    annotate_run(run, suites=["pst_single", "pst_paired_power"], vqa=resume, batch_size=1)
    full = read_labels(run, "gender")
    m = usable(run)
    n_expected = int((m["suite"] == "pst_single").sum()) + 2 * int((m["suite"] == "pst_paired_power").sum())
    assert len(full) == n_expected
    assert resume.images == n_expected - len(partial)  # only the missing questions were asked
    merged = full.merge(partial, on=["probe_id", "person"], suffixes=("", "_old"))
    assert (merged["answer"] == merged["answer_old"]).all()


# --------------------------------------------------------------------------- errors


def test_errors(run):
    from benchmark.models import ModelSpecError

    with pytest.raises(ValueError, match="unknown suite"):
        annotate_run(run, suites=["no_such_suite"])
    with pytest.raises(ModelSpecError):  # a bad spec fails before anything is loaded or written
        annotate_run(run, encoder="nonsense-spec")
    assert not (run / "labels").exists()
    (run / "manifest.parquet").unlink()
    with pytest.raises(RunFolderError, match="generation stage first"):
        annotate_run(run)


def test_generate_mode_keeps_the_papers_free_text_protocol(annotated_copy):
    """--vqa-mode generate: free-text answers parsed by the papers' rules (estimator "vqa
    generate"); they replace the suite's closed-set rows, other suites' rows are kept."""
    run = annotated_copy
    before = read_labels(run, "gender")
    s = annotate_run(run, suites=["pst_single"], annotators={"vqa_mode": "generate"})
    assert s.files_written == ["labels/gender.parquet"]
    g = read_labels(run, "gender")
    single = set(usable(run).query("suite == 'pst_single'")["probe_id"])
    free = g[g["probe_id"].isin(single)]
    assert len(free) == len(single) and (free["estimator"] == "vqa generate").all()
    assert [perceived_gender_label(a) for a in free["answer"]] == list(free["label"]) and free["score"].isna().all()
    others = g[~g["probe_id"].isin(single)].reset_index(drop=True)
    pd.testing.assert_frame_equal(others, before[~before["probe_id"].isin(single)].reset_index(drop=True))
    with pytest.raises(ValueError, match="unknown VQA mode"):
        annotate_run(run, suites=["pst_single"], annotators={"vqa_mode": "guess"})
