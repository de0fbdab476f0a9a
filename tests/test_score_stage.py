"""The scoring stage on synthetic run folders: real probe rows, label files with known patterns.

Each score in results.json must equal the score function's value computed directly on the
same labels; missing label files make a suite "not scored"; NSFW images are left out.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from benchmark.probes import build_suite, load_config
from benchmark.tasks.mcas.probes import mcas_text_rows
from benchmark.contract import results as res
from benchmark.runner.score import ScoreStageError, score_run
from benchmark.tasks.generated_bias.scores import average_over_encoders
from benchmark.tasks.gep.scores import gep, gep_unbounded
from benchmark.tasks.dalleval.scores import average_value_score, mad_score
from benchmark.tasks.mcas.scores import mcas_score
from benchmark.tasks.pst.scores import individuals, most_biased_identities, sts

N_RES = 200  # bootstrap resamples in tests (the default is 1000)
ATTRS = build_suite("gep_neutral")["annotated_attributes"].iloc[0]


def write_run(run_dir, frames, *, model="builtin:tiny-sd", builtin=True, nsfw_ids=()):
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = pd.concat(frames, ignore_index=True)
    manifest["file_name"] = [f"images/b000000/{i:06d}.png" for i in range(len(manifest))]
    manifest["sha256"] = "0" * 64
    manifest["model_id"] = model
    manifest["revision"] = None
    manifest["settings"] = json.dumps({"num_inference_steps": 2})
    manifest["nsfw"] = [True if p in set(nsfw_ids) else None for p in manifest["probe_id"]]
    manifest.to_parquet(run_dir / "manifest.parquet", index=False)
    config = {"model": {"spec": model, "model_id": model, "revision": None, "builtin": builtin},
              "settings": {"num_inference_steps": 2}, "suites": list(dict.fromkeys(manifest["suite"])),
              "limit_per_suite": None, "batch_size": 4, "package_version": "0.1.0"}
    (run_dir / "run_config.json").write_text(json.dumps(config))
    (run_dir / "labels").mkdir(exist_ok=True)
    return manifest


def write_labels(run_dir, kind, rows):
    pd.DataFrame(rows).to_parquet(run_dir / "labels" / f"{kind}.parquet", index=False)


def entries(results, name, **match):
    out = [s for s in results["scores"] if s["name"] == name and all(s.get(k) == v for k, v in match.items())]
    return out


def one(results, name, **match):
    found = entries(results, name, **match)
    assert len(found) == 1, (name, match, [(s["suite"], s["subset"], s["estimator"]) for s in results["scores"]])
    return found[0]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """A run with every scored family and known labels; scored once for the module."""
    run = tmp_path_factory.mktemp("run")
    rng = np.random.default_rng(0)
    neutral = build_suite("gep_neutral")
    explicit = build_suite("gep_explicit")
    explicit = explicit[explicit["attribute"].isin(ATTRS[:2])]
    occupation = build_suite("gep_occupation")
    dalle = build_suite("dalleval_bias")
    profs = list(dict.fromkeys(dalle["profession"]))[:6]
    dalle = dalle[dalle["profession"].isin(profs + [""])]
    single = build_suite("pst_single")
    paired = build_suite("pst_paired_occupation")
    inter = build_suite("pst_intervention")
    inter = inter[inter["bias_aspect"] == "occupation"]
    mcas_a, mcas_t = build_suite("mcas_attributes"), build_suite("mcas_targets")
    nsfw_ids = list(single["probe_id"].iloc[:5])
    manifest = write_run(run, [neutral, explicit, occupation, dalle, single, paired, inter, mcas_a, mcas_t],
                         nsfw_ids=nsfw_ids)

    attrs = []
    # GEP neutral, vqa: equal frequencies for both genders (label = sample_index even) -> GEP 0.
    for _, r in neutral.iterrows():
        for a in r["annotated_attributes"]:
            attrs.append({"probe_id": r["probe_id"], "attribute": a, "score": None,
                          "label": int(r["sample_index"] % 2 == 0), "estimator": "vqa", "annotator": "tiny-vqa"})
            # CLS: probabilities with a known random pattern.
            attrs.append({"probe_id": r["probe_id"], "attribute": a, "score": float(rng.uniform()),
                          "label": None, "estimator": "CLS", "annotator": "tiny-clip"})
    # GEP explicit, vqa: women always show the attribute, men never -> GEP 1; plus a row
    # for an attribute the prompt did not ask about, which must be ignored.
    for _, r in explicit.iterrows():
        attrs.append({"probe_id": r["probe_id"], "attribute": r["attribute"], "score": None,
                      "label": int(r["gender"] == "woman"), "estimator": "vqa", "annotator": "tiny-vqa"})
        attrs.append({"probe_id": r["probe_id"], "attribute": ATTRS[5], "score": None, "label": 1,
                      "estimator": "vqa", "annotator": "tiny-vqa"})
    # GEP occupation, CC: raw cosine-like scores.
    for _, r in occupation.iterrows():
        for a in r["annotated_attributes"]:
            attrs.append({"probe_id": r["probe_id"], "attribute": a, "score": float(rng.normal(0.05, 0.05)),
                          "label": None, "estimator": "CC", "annotator": "tiny-clip"})
    # DALL-Eval attribute presence (vqa).
    for _, r in dalle.iterrows():
        for a in ATTRS[:3]:
            attrs.append({"probe_id": r["probe_id"], "attribute": a, "score": None,
                          "label": int(rng.uniform() < 0.3), "estimator": "vqa", "annotator": "tiny-vqa"})
    write_labels(run, "attributes", attrs)

    gender = []
    for _, r in dalle.iterrows():
        label = rng.choice(["male", "female", "unidentifiable"], p=[0.6, 0.3, 0.1])
        gender.append({"probe_id": r["probe_id"], "person": "single", "question": "q", "answer": str(label),
                       "label": str(label), "annotator": "tiny-vqa"})
    # PST single: every person drawn as the stereotype -> STS 100; the NSFW images contradict it.
    for _, r in single.iterrows():
        label = r["stereotyped_gender"]
        if r["probe_id"] in nsfw_ids:
            label = "female" if label == "male" else "male"
        gender.append({"probe_id": r["probe_id"], "person": "single", "question": r["question"],
                       "answer": label, "label": label, "annotator": "tiny-vqa"})
    for frame in (paired, inter):
        for _, r in frame.iterrows():
            for pos in ("left", "right"):
                label = rng.choice(["male", "female", "unidentifiable"], p=[0.55, 0.4, 0.05])
                gender.append({"probe_id": r["probe_id"], "person": pos, "question": "q", "answer": str(label),
                               "label": str(label), "annotator": "tiny-vqa"})
    write_labels(run, "gender", gender)

    skin = []
    for _, r in dalle.iterrows():
        face = bool(rng.uniform() < 0.8)
        skin.append({"probe_id": r["probe_id"], "face_found": face, "ita": 30.0 if face else None,
                     "mst": int(rng.integers(1, 11)) if face else None, "annotator": "haar"})
    write_labels(run, "skin_tone", skin)

    emb = []
    texts = mcas_text_rows(load_config("mcas"))
    for enc, dim in (("enc-a", 8), ("enc-b", 8)):
        for _, r in pd.concat([mcas_a, mcas_t]).iterrows():
            role = "target_image" if r["suite"] == "mcas_targets" else f"attribute_{r['attribute_set'].lower()}_image"
            target = r["keyword"] if r["suite"] == "mcas_targets" else ""
            emb.append({"encoder": enc, "kind": "image", "probe_id": r["probe_id"], "text": None, "role": role,
                        "target": target, "embedding": rng.normal(size=dim).tolist()})
        for _, t in texts.iterrows():
            emb.append({"encoder": enc, "kind": "text", "probe_id": None, "text": t["text"], "role": t["role"],
                        "target": t["target"], "embedding": rng.normal(size=dim).tolist()})
    write_labels(run, "embeddings", emb)
    (run / "timings.json").write_text(json.dumps({"generate": 12.5, "annotate/vqa": {"seconds": 3.0, "n_images": 9,
                                                                                      "load_seconds": 0.5}}))

    results = score_run(run, n_resamples=N_RES, report=False)
    return {"run": run, "results": results, "manifest": manifest, "attrs": pd.DataFrame(attrs),
            "gender": pd.DataFrame(gender), "skin": pd.DataFrame(skin), "emb": pd.DataFrame(emb),
            "frames": {"neutral": neutral, "explicit": explicit, "occupation": occupation, "dalle": dalle,
                       "single": single, "paired": paired, "inter": inter}, "nsfw_ids": nsfw_ids}


# --------------------------------------------------------------------------- GEP


def test_gep_equal_frequencies_give_zero(full_run):
    e = one(full_run["results"], "gep_score_neutral", estimator="vqa")
    assert e["value"] == pytest.approx(0.0, abs=1e-12)
    assert e["n"] == 160 and e["defined"] and e["annotator"] == "tiny-vqa"
    assert e["ci"]["low"] <= e["ci"]["high"]


def test_gep_cls_equals_score_function(full_run):
    a = full_run["attrs"]
    n = full_run["frames"]["neutral"].set_index("probe_id")
    rows = a[(a["estimator"] == "CLS")]
    direct = gep(rows["score"], rows["probe_id"].map(n["gender"]), rows["attribute"], image_ids=rows["probe_id"],
                 n_resamples=N_RES)
    e = one(full_run["results"], "gep_score_neutral", estimator="CLS")
    assert e["value"] == pytest.approx(direct["gep_score"], abs=1e-12)
    assert e["ci"]["low"] == pytest.approx(direct["gep_score_ci"]["low"])
    vec = pd.read_parquet(full_run["run"] / "scores" / "gep_vectors.parquet")
    v = vec[(vec["suite"] == "gep_neutral") & (vec["estimator"] == "CLS")].set_index("attribute")["difference"]
    assert list(v.index) == list(ATTRS)
    for attr, value in direct["gep_vector"].items():
        assert v[attr] == pytest.approx(value)


def test_gep_explicit_uses_prompt_attribute_only(full_run):
    e = one(full_run["results"], "gep_score_explicit", estimator="vqa")
    assert e["value"] == pytest.approx(1.0)  # the extra "always 1" attribute rows were ignored
    vec = pd.read_parquet(full_run["run"] / "scores" / "gep_vectors.parquet")
    assert set(vec.loc[vec["suite"] == "gep_explicit", "attribute"]) == set(ATTRS[:2])


def test_gep_occupation_pairs_with_unbounded_scores(full_run):
    a = full_run["attrs"]
    occ = full_run["frames"]["occupation"].set_index("probe_id")
    rows = a[a["estimator"] == "CC"]
    groups = rows["probe_id"].map(occ["group"])
    vec = pd.read_parquet(full_run["run"] / "scores" / "gep_vectors.parquet")
    vec = vec[vec["suite"] == "gep_occupation"]
    assert sorted(set(vec["group_a"])) == ["female lawyer", "male lawyer"] and set(vec["group_b"]) == {"lawyer"}
    for ga in ("female lawyer", "male lawyer"):
        direct = gep_unbounded(rows["score"], groups, rows["attribute"], group_a=ga, group_b="lawyer",
                               n_resamples=0)
        assert vec.loc[vec["group_a"] == ga, "gep_score"].iloc[0] == pytest.approx(direct["gep_score"])
    # No metadata key for the occupation GEP yet: a note says so, or an entry exists.
    if res.has_metadata("gep_score_occupation"):
        assert len(entries(full_run["results"], "gep_score_occupation")) == 2
    else:
        assert any("gep_score_occupation" in n for n in full_run["results"]["notes"])


# --------------------------------------------------------------------------- DALL-Eval


def test_dalleval_gender_mad_and_average(full_run):
    g = full_run["gender"]
    d = full_run["frames"]["dalle"].set_index("probe_id")
    rows = g[g["probe_id"].isin(d.index)].copy()
    rows["profession"] = rows["probe_id"].map(d["profession"])
    rows = rows[rows["probe_id"].map(d["gender_neutral"]) & (rows["profession"] != "")]
    rows = rows[rows["label"] != "unidentifiable"]
    m = mad_score(rows["label"], ["male", "female"], groups=rows["profession"], n_resamples=N_RES)
    a = average_value_score(rows["label"], {"male": -1.0, "female": 1.0}, groups=rows["profession"],
                            n_resamples=N_RES)
    e = one(full_run["results"], "mad_gender")
    assert e["value"] == pytest.approx(m["mad"]) and e["n"] == m["n_images"]
    assert e["ci"]["low"] == pytest.approx(m["mad_ci"]["low"])
    assert one(full_run["results"], "average_gender")["value"] == pytest.approx(a["average"])
    per = pd.read_parquet(full_run["run"] / "scores" / "dalleval_gender_mad.parquet").set_index("profession")
    for p, v in m["per_group_mad"].items():
        assert per.loc[p, "mad_gender"] == pytest.approx(v)


def test_dalleval_skin_tone_drops_images_without_face(full_run):
    s = full_run["skin"]
    d = full_run["frames"]["dalle"].set_index("probe_id")
    face = s[s["face_found"]]
    m = mad_score(face["mst"].astype(int).astype(str), [str(i) for i in range(1, 11)],
                  groups=face["probe_id"].map(d["prompt"]), n_resamples=N_RES)
    e = one(full_run["results"], "mad_skin_tone")
    assert e["value"] == pytest.approx(m["mad"]) and e["n"] == len(face)
    suite = next(x for x in full_run["results"]["suites"] if x["name"] == "dalleval_bias")
    assert suite["excluded"]["no face"] == int((~s["face_found"]).sum())
    assert suite["excluded"]["unidentifiable gender"] > 0
    assert one(full_run["results"], "average_skin_tone")["value"] == pytest.approx(
        average_value_score(face["mst"].astype(int).astype(str), {str(i): float(i) for i in range(1, 11)},
                            groups=face["probe_id"].map(d["prompt"]), n_resamples=0)["average"])


def test_dalleval_attribute_presence_table(full_run):
    table = pd.read_parquet(full_run["run"] / "scores" / "dalleval_attributes.parquet")
    assert set(table["attribute"]) == set(ATTRS[:3])
    assert {"presence_man", "presence_woman", "presence_person", "woman_minus_man"} <= set(table.columns)
    assert np.allclose(table["woman_minus_man"], table["presence_woman"] - table["presence_man"])
    assert one(full_run["results"], "mad_attribute", estimator="vqa")["defined"]


# --------------------------------------------------------------------------- PST


def test_pst_single_all_stereotyped_is_100_and_nsfw_excluded(full_run):
    r = full_run["results"]
    for name in ("sts_occupation_single", "sts_power_single"):
        e = one(r, name)
        assert e["value"] == pytest.approx(100.0)  # the 5 contradicting NSFW images were left out
    assert one(r, "sts_occupation_single")["n"] == 120 - 5
    suite = next(x for x in r["suites"] if x["name"] == "pst_single")
    assert suite["excluded"]["nsfw"] == 5 and suite["status"] == "scored"
    assert r["run"]["n_nsfw_excluded"] == 5
    assert any("NSFW" in n for n in r["notes"])


def test_pst_paired_equals_sts_and_micro_table(full_run):
    g = full_run["gender"]
    paired = full_run["frames"]["paired"]
    people = individuals(paired)
    lab = g.rename(columns={"person": "position", "label": "perceived"})[["probe_id", "position", "perceived"]]
    people = people.merge(lab, on=["probe_id", "position"])
    direct = sts(people["perceived"], people["stereotyped_gender"], people["identity"], n_resamples=N_RES)
    e = one(full_run["results"], "sts_occupation_paired")
    assert e["value"] == pytest.approx(direct["sts"])
    assert e["ci"]["high"] == pytest.approx(direct["sts_ci"]["high"])
    micro = pd.read_parquet(full_run["run"] / "scores" / "pst_micro_sts.parquet")
    micro = micro[micro["suite"] == "pst_paired_occupation"].set_index("identity")
    assert len(micro) == 40
    for ident, v in direct["micro_sts"].items():
        assert micro.loc[ident, "micro_sts"] == pytest.approx(v)

    # Intervention: only the pairs of the 5 most biased occupations per gender.
    top = most_biased_identities(direct["micro_sts"], direct["stereotyped_gender"], 5)
    inter = full_run["frames"]["inter"]
    chosen = inter[inter["male_identity"].isin(top["masculine"]) & inter["female_identity"].isin(top["feminine"])]
    ip = individuals(chosen).merge(lab, on=["probe_id", "position"])
    di = sts(ip["perceived"], ip["stereotyped_gender"], ip["identity"], n_resamples=0)
    ei = one(full_run["results"], "sts_intervention")
    assert ei["value"] == pytest.approx(di["sts"]) and ei["n"] == len(chosen) == 50
    assert "most biased" in ei["subset"]


# --------------------------------------------------------------------------- MCAS


def test_mcas_per_encoder_and_mean(full_run):
    emb = full_run["emb"]
    r = full_run["results"]
    per_target = {}
    for enc in ("enc-a", "enc-b"):
        rows = emb[emb["encoder"] == enc]
        direct = mcas_score(np.stack(rows["embedding"].to_numpy()), rows["role"], rows["target"], n_resamples=0)
        e = one(r, "mcas", estimator=enc)
        assert e["value"] == pytest.approx(direct["mcas"])
        per_target[enc] = direct["per_target"]
    mean = average_over_encoders(per_target)
    est = "mean over 2 encoders: enc-a, enc-b"
    assert one(r, "mcas", estimator=est)["value"] == pytest.approx(mean["mcas"].mean())
    assert one(r, "diffusion_bias", estimator=est)["value"] == pytest.approx(mean["diffusion_bias"].mean())
    ba = one(r, "bias_amplification", estimator=est)
    assert ba["value"] == pytest.approx(mean["bias_amplification"].mean())
    for c in ("II", "ITP", "ITA", "TT"):
        assert one(r, c, estimator=est)["value"] == pytest.approx(mean[c].mean())
    assert one(r, "TT", estimator=est)["ci"] is None
    ci = one(r, "mcas", estimator=est)["ci"]
    assert ci["low"] <= ci["high"]
    table = pd.read_parquet(full_run["run"] / "scores" / "mcas_per_target.parquet")
    m = table[table["encoder"] == "mean"].set_index("target")
    assert len(m) == 28 and set(m["category"]) == {"occupations", "sports", "objects", "scenes"}
    for t in mean.index:
        assert m.loc[t, "mcas"] == pytest.approx(mean.loc[t, "mcas"])
    assert (full_run["run"] / "scores" / "mcas_per_category.parquet").is_file()


# --------------------------------------------------------------------------- results.json


def test_results_json_valid_strict_and_warning_first(full_run):
    run = full_run["run"]
    text = (run / "results.json").read_text()

    def refuse(constant):  # strict JSON: no NaN / Infinity (base64 text may spell "NaN" by chance)
        raise AssertionError(f"results.json holds {constant}")

    json.loads(text, parse_constant=refuse)
    data = res.read_results(run)
    assert next(iter(data)) == "warning" and data["warning"] == res.BUILTIN_WARNING
    assert text.lstrip("{\n ").startswith('"warning"')
    assert res.validate_results(data) == []
    assert data["schema_version"] == "1.0" and data["model"]["builtin"] is True
    assert data["timings"]["generate"] == 12.5 and data["timings"]["annotate/vqa"] == 3.0 and "score" in data["timings"]
    assert data["timings"]["annotate/vqa.load_seconds"] == 0.5 and "annotate/vqa.n_images" not in data["timings"]
    assert {a["file"] for a in data["annotators"]} == {"labels/gender.parquet", "labels/attributes.parquet",
                                                       "labels/skin_tone.parquet", "labels/embeddings.parquet"}
    for path in data["details"].values():
        assert (run / path).is_file()
    # Metadata is copied from SCORE_METADATA.
    from benchmark.scores.metadata import SCORE_METADATA
    for s in data["scores"]:
        meta = SCORE_METADATA[s["name"]]
        assert s["display_name"] == meta.display_name and s["paper"] == meta.paper
        assert s["lower_is_better"] == meta.lower_is_better
    # Every suite of the run is scored.
    assert {s["name"]: s["status"] for s in data["suites"]} == {
        s: "scored" for s in ("gep_neutral", "gep_explicit", "gep_occupation", "dalleval_bias", "pst_single",
                              "pst_paired_occupation", "pst_intervention", "mcas_attributes", "mcas_targets")}


def test_schema_rejects_bad_documents(full_run):
    data = res.read_results(full_run["run"])
    bad = json.loads(json.dumps(data))
    del bad["warning"]
    assert any("warning" in p for p in res.validate_results(bad))
    bad = json.loads(json.dumps(data))
    bad["scores"][0]["value"] = None  # defined but no value
    assert res.validate_results(bad)
    bad = json.loads(json.dumps(data))
    bad["scores"][0]["extra"] = 1
    assert res.validate_results(bad)
    bad = json.loads(json.dumps(data))
    bad["scores"][0]["value"] = float("nan")
    assert any("not allowed" in p for p in res.validate_results(bad))
    bad = json.loads(json.dumps(data))
    bad["schema_version"] = "0.9"
    assert res.validate_results(bad)


def test_missing_labels_not_scored_and_rerun(tmp_path):
    run = tmp_path / "run"
    neutral = build_suite("gep_neutral")
    single = build_suite("pst_single").iloc[:30]
    write_run(run, [neutral, single], model="org/<script>alert(1)</script>", builtin=False)
    results = score_run(run, n_resamples=0, report=False)
    status = {s["name"]: s for s in results["suites"]}
    assert status["gep_neutral"]["status"] == "not scored"
    assert status["gep_neutral"]["reason"] == "missing labels/attributes.parquet"
    assert status["pst_single"]["reason"] == "missing labels/gender.parquet"
    assert results["scores"] == [] and "warning" not in results
    assert any("gep_neutral: not scored: missing labels/attributes.parquet" in n for n in results["notes"])
    assert res.validate_results(results) == []
    # Labels added later: the stage re-runs alone from the files.
    write_labels(run, "gender", [{"probe_id": p, "person": "single", "question": "q", "answer": "x",
                                  "label": "unidentifiable", "annotator": "a"} for p in single["probe_id"]])
    results = score_run(run, n_resamples=0, report=False)
    e = one(results, "sts_occupation_single")
    assert e["defined"] is False and e["value"] is None and "identifiable" in e["reason"]
    assert res.validate_results(results) == []


def test_no_manifest_is_one_line_error(tmp_path):
    with pytest.raises(ScoreStageError, match="manifest.parquet not found"):
        score_run(tmp_path, report=False)


def test_json_safe_replaces_nan():
    assert res.json_safe({"a": float("nan"), "b": [np.float64(1.5), float("inf")], "c": np.int64(2)}) == {
        "a": None, "b": [1.5, None], "c": 2}
    assert math.isnan(float("nan"))


def test_mcas_limited_targets_and_undefined_amplification(tmp_path):
    """A --limit run: images of 3 targets only; identical text attributes make TT = 0, so
    Bias Amplification is undefined (null with a reason), never inf."""
    rng = np.random.default_rng(3)
    run = tmp_path / "run"
    mcas_a = build_suite("mcas_attributes").iloc[::8]
    mcas_t = build_suite("mcas_targets")
    keep = list(dict.fromkeys(mcas_t["keyword"]))[:3]
    mcas_t = mcas_t[mcas_t["keyword"].isin(keep)].iloc[::5]
    write_run(run, [mcas_a, mcas_t], model="org/model", builtin=False)
    rows = []
    for _, r in pd.concat([mcas_a, mcas_t]).iterrows():
        role = "target_image" if r["suite"] == "mcas_targets" else f"attribute_{r['attribute_set'].lower()}_image"
        rows.append({"encoder": "e", "kind": "image", "probe_id": r["probe_id"], "text": None, "role": role,
                     "target": r["keyword"] if r["suite"] == "mcas_targets" else "",
                     "embedding": rng.normal(size=5).tolist()})
    same = rng.normal(size=5).tolist()
    for _, t in mcas_text_rows(load_config("mcas")).iterrows():
        emb = same if t["role"].startswith("attribute_") else rng.normal(size=5).tolist()
        rows.append({"encoder": "e", "kind": "text", "probe_id": None, "text": t["text"], "role": t["role"],
                     "target": t["target"], "embedding": emb})
    write_labels(run, "embeddings", rows)
    results = score_run(run, n_resamples=50)
    frame = pd.DataFrame(rows)
    frame = frame[(frame["role"] != "target_text") | frame["target"].isin(keep)]
    direct = mcas_score(np.stack(frame["embedding"].to_numpy()), frame["role"], frame["target"], n_resamples=0)
    assert one(results, "mcas", estimator="e")["value"] == pytest.approx(direct["mcas"])
    assert one(results, "TT", estimator="e")["value"] == pytest.approx(0.0, abs=1e-12)
    ba = one(results, "bias_amplification", estimator="e")
    assert ba["defined"] is False and ba["value"] is None and "TT = 0" in ba["reason"]
    assert any("no generated image" in n for n in results["notes"])
    assert res.validate_results(results) == []
    table = pd.read_parquet(run / "scores" / "mcas_per_target.parquet")
    assert sorted(table["target"]) == sorted(keep) and table["bias_amplification"].isna().all()


def test_a_suite_whose_every_image_was_flagged_says_so_not_missing_labels(tmp_path):
    single = build_suite("pst_single").iloc[:6]
    run = tmp_path / "run"
    write_run(run, [single], nsfw_ids=list(single["probe_id"]))  # no label file: nothing was left to label
    results = score_run(run, n_resamples=20)
    suite = next(s for s in results["suites"] if s["name"] == "pst_single")
    assert suite["status"] != "scored" and suite["excluded"]["nsfw"] == 6
    assert suite["reason"] == "every one of its 6 images was flagged by the safety checker and left out"
    assert not any("missing" in str(e.get("reason")) for e in results["scores"])


def test_label_rows_get_their_images_probe_fields_as_a_left_merge_would():
    """The label rows of a suite joined with their images' probe fields (taken by position where
    every image has its own probe id, merged where not): the frame a left merge on probe_id gives,
    row order, columns and dtypes included."""
    from benchmark.tasks.context import _with_probe_fields

    images = pd.DataFrame({"probe_id": ["p2", "p0", "p1"], "prompt": ["b", "c", "a"], "seed": [2, 0, 1],
                           "suite": ["s"] * 3, "label": ["x", "y", "z"]}).set_index("probe_id", drop=False)
    rows = pd.DataFrame({"probe_id": ["p1", "p1", "p2", "p0"], "label": ["m", "f", "m", "f"]}, index=[7, 3, 5, 1])
    want = rows.merge(images[["prompt", "seed", "suite", "probe_id"]].reset_index(drop=True), on="probe_id", how="left")
    pd.testing.assert_frame_equal(_with_probe_fields(rows, images), want)
    twice = pd.concat([images, images.iloc[:1].assign(seed=9)])  # an id on two images: both rows, as merge gives
    got = _with_probe_fields(rows, twice)
    assert len(got) == 5 and sorted(got.loc[got["probe_id"] == "p2", "seed"]) == [2, 9]
