"""The reference-attributes dataset: built from a tiny run's mcas_attributes images (--allow-demo),
its three configs loaded offline by `datasets` and by the audit loader, refusals in one line with
exit status 2, the Hub paths (download and push) with huggingface_hub mocked."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import datasets
import pandas as pd
import pytest
import yaml

import benchmark.reference_attributes as reader
from benchmark.registries import register_reference_config
from benchmark.reference_attributes import (
    ReferenceAttributesError,
    ReferenceConfig,
    data_fingerprint,
    load_reference_attributes,
    reference_configs,
)
from benchmark.tasks.mcas.reference_configs import IMAGE_ATTRIBUTES, TEXT_ATTRIBUTES
from benchmark.tasks.mcas import reference_dataset as builder
from dataset_builders.reference_attributes import main as builder_main

LIMIT = 16
#: the configs of the dataset, in the order of the card (declared by the skin-tone side and MCAS)
CONFIGS = ("mst_swatches", "mcas_text_attributes", "mcas_image_attributes")
TABLE_1 = {"A": ["he", "him", "his", "man", "male", "boy", "father", "son", "husband", "brother"],
           "B": ["she", "her", "hers", "woman", "female", "girl", "mother", "daughter", "wife", "sister"]}


def _env(**extra):
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **extra}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A real tiny run: builtin:tiny-sd on the mcas_attributes suite, --limit 16."""
    root = tmp_path_factory.mktemp("reference_run")
    out = root / "run"
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "generate", "--model", "builtin:tiny-sd", "--suites",
                           "mcas_attributes", "--limit", str(LIMIT), "--out", str(out)],
                          env=_env(T2IBENCH_CACHE=str(root / "cache")), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def built(run_dir, tmp_path_factory):
    """The dataset folder built from the run by the command line, and what it printed."""
    out = tmp_path_factory.mktemp("reference_ds") / "ref"
    proc = subprocess.run([sys.executable, "-m", "dataset_builders.reference_attributes", "--out", str(out),
                           "--from-run", str(run_dir), "--allow-demo"], env=_env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, proc.stdout


def _card(folder):
    text = (folder / "README.md").read_text()
    return yaml.safe_load(text[4:].split("\n---\n", 1)[0]), text


def test_three_configs_load_offline_with_load_dataset(built, run_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out, _ = built
    cache = str(tmp_path / "hf-cache")
    loaded = {c: datasets.load_dataset(str(out), c, split="train", cache_dir=cache) for c in CONFIGS}
    header, _ = _card(out)
    assert [c["config_name"] for c in header["configs"]] == list(CONFIGS)

    swatches = loaded["mst_swatches"]
    assert swatches.num_rows == 10 and swatches["mst"] == list(range(1, 11))
    assert isinstance(swatches.features["image"], datasets.Image)
    assert swatches[0]["srgb_hex"] == "#f6ede4" and swatches[9]["srgb_hex"] == "#292420"
    assert all("DallEval" in s and "helm" in s for s in swatches["source"])
    assert all("MIT" in s and "Apache-2.0" in s for s in swatches["licence"])

    texts = loaded["mcas_text_attributes"].to_pandas()
    for name, words in TABLE_1.items():
        assert list(texts.loc[texts["attribute_set"] == name, "text"]) == words
    assert set(texts["gender"]) == {"male", "female"}
    assert all(list(p) == ["MCAS Table 1", "Generated Bias Table 1"] for p in texts["papers"])

    images = loaded["mcas_image_attributes"]
    manifest = pd.read_parquet(run_dir / "manifest.parquet")
    config = json.loads((run_dir / "run_config.json").read_text())
    assert images.num_rows == LIMIT == len(manifest)
    by_id = manifest.set_index("probe_id")
    for row in images:
        src = by_id.loc[row["probe_id"]]
        for field in ("attribute_set", "gender", "keyword", "prompt", "seed", "sha256", "model_id", "revision"):
            assert row[field] == src[field], field
        assert row["model_id"] == "builtin:tiny-sd" and row["revision"] == config["model"]["revision"]
        assert json.loads(row["settings"]) == config["settings"]
        assert row["image"].size == (config["settings"]["width"], config["settings"]["height"])
    assert set(images["attribute_set"]) == {"A", "B"}
    assert {(r["attribute_set"], r["gender"]) for r in images} == {("A", "male"), ("B", "female")}


def test_images_are_the_run_files_byte_for_byte(built, run_dir):
    import pyarrow.parquet as pq

    out, _ = built
    table = pq.read_table(out / "mcas_image_attributes" / "train-00000-of-00001.parquet").to_pylist()
    manifest = pd.read_parquet(run_dir / "manifest.parquet").set_index("probe_id")
    for row in table:
        assert row["image"]["bytes"] == (run_dir / manifest.loc[row["probe_id"], "image_path"]).read_bytes()


def test_card_says_where_from_what_for_and_not_ground_truth(built):
    out, stdout = built
    header, text = _card(out)
    assert "Demo build: the images are meaningless" in text and "builtin:tiny-sd" in text
    assert "one model's depiction of gender, not ground truth" in text
    assert "comparable across models" in text and "Monk Skin Tone" in text
    assert "Partial" in text and f"--limit {LIMIT}" in text
    for key in ("mandal2023mcas", "mandal2024generatedbias", "cho2023dalleval", "monk2022mst"):
        assert key in text
    fingerprint = data_fingerprint(out)
    assert fingerprint in text and fingerprint in stdout and "demo" in stdout
    assert header["dataset_info"][0]["download_size"] > 0


def test_loader_reads_the_folder(built):
    out, _ = built
    ref = load_reference_attributes(out)
    assert ref.identity.to_dict() == {"source": str(out), "revision": None, "fingerprint": data_fingerprint(out)}
    assert list(ref.configs) == list(CONFIGS)
    images = ref.require(IMAGE_ATTRIBUTES)
    assert ref.config(IMAGE_ATTRIBUTES) is images
    assert len(images) == LIMIT and set(images["attribute_set"]) == {"A", "B"}
    assert all(im.convert("RGB").size[0] > 0 for im in images["image"])
    assert list(ref.mst_swatches["mst"]) == list(range(1, 11))
    assert ref.mst_swatches["image"][0].convert("RGB").getpixel((0, 0)) == (246, 237, 228)
    texts = ref.config(TEXT_ATTRIBUTES)
    assert len(texts) == 20 and set(texts["role"]) == {"attribute_a_text", "attribute_b_text"}
    assert all(p == ["MCAS Table 1", "Generated Bias Table 1"] for p in texts["papers"])


def test_fingerprint_is_reproducible_and_follows_the_data(built, run_dir, tmp_path):
    out, _ = built
    again = tmp_path / "again"
    builder.build_reference_dataset(again, from_run=run_dir, allow_demo=True)
    assert data_fingerprint(again) == data_fingerprint(out)
    (again / "README.md").write_text((again / "README.md").read_text() + "\nReworded.\n")
    assert data_fingerprint(again) == data_fingerprint(out)  # the card is not data
    plain = tmp_path / "plain"
    builder.build_reference_dataset(plain)
    assert data_fingerprint(plain) != data_fingerprint(out)


def test_a_reference_without_a_run_has_no_images(tmp_path):
    out = tmp_path / "plain"
    summary = builder.build_reference_dataset(out)
    assert summary["configs"] == {"mst_swatches": 10, "mcas_text_attributes": 20}
    ref = load_reference_attributes(out)
    assert ref.config(IMAGE_ATTRIBUTES) is None and list(ref.configs) == list(CONFIGS[:2])
    with pytest.raises(ReferenceAttributesError) as info:
        ref.require(IMAGE_ATTRIBUTES)
    assert str(info.value) == (f"reference {out} has no mcas_image_attributes config: build it with "
                               "`python -m dataset_builders.reference_attributes --from-run RUN_DIR`")
    with pytest.raises(ReferenceAttributesError, match="no reference config 'nothing' is declared"):
        ref.config("nothing")
    _, text = _card(out)
    assert "Demo build" not in text and "mcas_image_attributes/" not in text


def test_a_fresh_reader_finds_the_configs_the_task_folders_declare(tmp_path):
    """Only the reader imported: its first lookup imports the task folders, so the MCAS configs
    are read (and required) as when the task runs."""
    out = tmp_path / "plain"
    builder.build_reference_dataset(out)
    code = ("from benchmark.reference_attributes import load_reference_attributes as load, "
            "ReferenceAttributesError as E\n"
            f"ref = load({str(out)!r})\nprint(list(ref.configs))\n"
            "try:\n    ref.require('mcas_image_attributes')\nexcept E as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [str(["mst_swatches", "mcas_text_attributes"]),
                                        f"reference {out} has no mcas_image_attributes config: build it with "
                                        "`python -m dataset_builders.reference_attributes --from-run RUN_DIR`"]


def test_a_config_declared_by_another_owner_is_read_checked_and_fingerprinted(tmp_path, monkeypatch):
    assert tuple(reference_configs()) == CONFIGS
    out = tmp_path / "plain"
    builder.build_reference_dataset(out)
    before = data_fingerprint(out)
    (out / "toy_words").mkdir()
    pd.DataFrame({"word": ["a", "b"]}).to_parquet(out / "toy_words" / "train-00000-of-00001.parquet")
    header, body = (out / "README.md").read_text()[4:].split("\n---\n", 1)
    header = yaml.safe_load(header)
    header["configs"].append({"config_name": "toy_words",
                              "data_files": [{"split": "train", "path": "toy_words/train-*.parquet"}]})
    (out / "README.md").write_text(f"---\n{yaml.safe_dump(header, sort_keys=False)}---\n{body}")
    # undeclared: neither read nor fingerprinted
    assert "toy_words" not in load_reference_attributes(out).configs and data_fingerprint(out) == before

    def upper(frame, where):
        if len(frame) > 5:
            raise ValueError("too many words")
        return frame.assign(word=frame["word"].str.upper())

    monkeypatch.setitem(reader._CONFIGS, "toy_words", ReferenceConfig("toy_words", ("word",), prepare=upper))
    ref = load_reference_attributes(out)
    assert list(ref.config("toy_words")["word"]) == ["A", "B"] and list(ref.configs)[-1] == "toy_words"
    assert ref.identity.fingerprint == data_fingerprint(out) != before
    pd.DataFrame({"word": list("abcdef")}).to_parquet(out / "toy_words" / "train-00000-of-00001.parquet")
    with pytest.raises(ReferenceAttributesError) as info:
        load_reference_attributes(out)
    assert str(info.value) == f"{out}: toy_words: too many words"
    monkeypatch.setitem(reader._CONFIGS, "toy_words", ReferenceConfig("toy_words", ("word", "n")))
    with pytest.raises(ReferenceAttributesError, match=r"config toy_words lacks the columns \['n'\]"):
        load_reference_attributes(out)
    monkeypatch.setitem(reader._CONFIGS, "toy_other", ReferenceConfig("toy_other", ("x",), required=True))
    with pytest.raises(ReferenceAttributesError, match=r"lacks the configs \['toy_other'\]"):
        load_reference_attributes(out)
    with pytest.raises(ValueError, match="declared twice"):
        register_reference_config(ReferenceConfig("mst_swatches", ("mst",)))


# ------------------------------------------------------------------------ refusals


def test_builtin_run_is_refused_without_allow_demo(run_dir, tmp_path):
    out = tmp_path / "ref"
    proc = subprocess.run([sys.executable, "-m", "dataset_builders.reference_attributes", "--out", str(out),
                           "--from-run", str(run_dir)], env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "built-in random model builtin:tiny-sd" in proc.stderr and "--allow-demo" in proc.stderr
    assert not out.exists()


def _copy_run(run_dir, dest):
    shutil.copytree(run_dir, dest)
    return dest


@pytest.mark.parametrize("case", ["no_mcas_images", "not_a_run", "missing_folder", "tampered_image", "missing_image",
                                  "one_attribute_set", "out_is_the_run", "demo_without_run", "pr_without_push"])
def test_refusals_are_one_line_and_exit_2(case, run_dir, tmp_path, capsys):
    out = tmp_path / "ref"
    args = ["--out", str(out), "--allow-demo"]
    if case == "no_mcas_images":
        run = _copy_run(run_dir, tmp_path / "run")
        m = pd.read_parquet(run / "manifest.parquet")
        m.assign(suite="gep_neutral").to_parquet(run / "manifest.parquet")
        args += ["--from-run", str(run)]
        expect = "has no mcas_attributes images"
    elif case == "not_a_run":
        (tmp_path / "empty").mkdir()
        args += ["--from-run", str(tmp_path / "empty")]
        expect = "is not a run folder"
    elif case == "missing_folder":
        args += ["--from-run", str(tmp_path / "nowhere")]
        expect = "no such folder"
    elif case == "tampered_image":
        run = _copy_run(run_dir, tmp_path / "run")
        first = pd.read_parquet(run / "manifest.parquet")["image_path"].iloc[0]
        (run / first).write_bytes((run / first).read_bytes() + b"\0")
        args += ["--from-run", str(run)]
        expect = "does not match the sha256"
    elif case == "missing_image":
        run = _copy_run(run_dir, tmp_path / "run")
        (run / pd.read_parquet(run / "manifest.parquet")["image_path"].iloc[-1]).unlink()
        args += ["--from-run", str(run)]
        expect = "is missing"
    elif case == "one_attribute_set":
        run = _copy_run(run_dir, tmp_path / "run")
        m = pd.read_parquet(run / "manifest.parquet")
        m[m["attribute_set"] == "A"].to_parquet(run / "manifest.parquet")
        args += ["--from-run", str(run)]
        expect = "both attribute sets"
    elif case == "out_is_the_run":
        run = _copy_run(run_dir, tmp_path / "run")
        args = ["--out", str(run), "--from-run", str(run), "--allow-demo"]
        expect = "is a run folder"
    elif case == "demo_without_run":
        expect = "--allow-demo needs --from-run"
    else:
        args = ["--out", str(out), "--create-pr"]
        expect = "--create-pr needs --push-to-hub"
    if case == "out_is_the_run":  # a usage error, refused while parsing: argparse's one line and exit status 2
        with pytest.raises(SystemExit) as stopped:
            builder_main(args)
        assert stopped.value.code == 2
        prefix = "python -m dataset_builders.reference_attributes: error: argument --out: "
    else:
        assert builder_main(args) == 2
        prefix = "t2ibench: error: "
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(prefix) and expect in err, err
    assert not out.exists()
    if case == "out_is_the_run":
        assert (run / "run_config.json").is_file() and (run / "manifest.parquet").is_file()


# ------------------------------------------------------------------------ loader errors and the Hub


@pytest.mark.parametrize("case", ["not_a_path_or_id", "file", "revision_on_folder", "no_card", "missing_config",
                                  "tampered_parquet", "sha256_mismatch"])
def test_loader_errors_are_one_line(case, built, tmp_path):
    out, _ = built
    kwargs = {}
    if case == "not_a_path_or_id":
        source, expect = str(tmp_path / "a" / "b" / "c"), "neither a folder nor a Hub dataset id"
    elif case == "file":
        source, expect = out / "README.md", "is a file"
    elif case == "revision_on_folder":
        source, kwargs, expect = out, {"revision": "main"}, "Hub dataset only"
    elif case == "no_card":
        (tmp_path / "bare").mkdir()
        source, expect = tmp_path / "bare", "no README.md"
    elif case == "missing_config":
        source = shutil.copytree(out, tmp_path / "copy")
        text = (source / "README.md").read_text().replace("config_name: mst_swatches", "config_name: other")
        (source / "README.md").write_text(text)
        expect = "lacks the configs ['mst_swatches']"
    elif case == "tampered_parquet":
        source = shutil.copytree(out, tmp_path / "copy")
        (source / "mcas_image_attributes" / "train-00000-of-00001.parquet").write_bytes(b"not parquet")
        expect = "cannot read config mcas_image_attributes"
    else:  # an image whose bytes no longer match the recorded sha256
        import pyarrow as pa
        import pyarrow.parquet as pq

        source = shutil.copytree(out, tmp_path / "copy")
        path = source / "mcas_image_attributes" / "train-00000-of-00001.parquet"
        table = pq.read_table(path)
        shas = table.column("sha256").to_pylist()
        shas[3] = hashlib.sha256(b"another image").hexdigest()
        pq.write_table(table.set_column(table.schema.get_field_index("sha256"), "sha256", pa.array(shas)), path)
        expect = "do not match its sha256"
    with pytest.raises(ReferenceAttributesError) as info:
        load_reference_attributes(source, **kwargs)
    assert expect in str(info.value) and "\n" not in str(info.value)


def test_loader_takes_a_hub_dataset_at_its_resolved_commit(built, tmp_path, monkeypatch):
    import huggingface_hub

    out, _ = built
    commit = "0123456789abcdef0123456789abcdef01234567"
    calls = []

    def fake_snapshot_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs))
        snapshot = tmp_path / "hub" / "snapshots" / commit
        if not snapshot.exists():
            shutil.copytree(out, snapshot)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    ref = load_reference_attributes("someone/reference", revision="v1")
    assert ref.identity.to_dict() == {"source": "someone/reference", "revision": commit,
                                      "fingerprint": data_fingerprint(out)}
    assert calls[0][0] == "someone/reference"
    assert calls[0][1]["repo_type"] == "dataset" and calls[0][1]["revision"] == "v1"
    assert len(ref.require(IMAGE_ATTRIBUTES)) == LIMIT


def test_loader_offline_without_cache_is_one_line(tmp_path):
    code = ("from benchmark.reference_attributes import load_reference_attributes as load, "
            "ReferenceAttributesError as E\n"
            "try:\n    load('someone/reference', revision='main')\nexcept E as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=_env(HF_HOME=str(tmp_path / "hf")), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == ("cannot load the reference someone/reference@main: it is not in the local Hub cache "
                                   "and the Hub cannot be reached (offline)")


def test_push_to_hub_uploads_the_folder(built, tmp_path, monkeypatch, capsys):
    import benchmark.hub.access

    calls = []

    class FakeApi:
        def __init__(self, token=None):
            self.token = token

        def create_repo(self, repo_id, **kwargs):
            calls.append(("create_repo", repo_id, kwargs))

        def upload_folder(self, **kwargs):
            calls.append(("upload_folder", kwargs))
            return type("Info", (), {"pr_url": "https://hub.example/someone/reference/discussions/1"})()

    monkeypatch.setattr(benchmark.hub.access, "HfApi", FakeApi)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    out = tmp_path / "ref"
    assert builder_main(["--out", str(out), "--push-to-hub", "someone/reference", "--create-pr"]) == 0
    assert calls[0] == ("create_repo", "someone/reference", {"repo_type": "dataset", "exist_ok": True})
    upload = calls[1][1]
    assert upload["folder_path"] == str(out) and upload["repo_id"] == "someone/reference"
    assert upload["repo_type"] == "dataset" and upload["create_pr"] is True
    assert "pushed to https://hub.example/someone/reference/discussions/1" in capsys.readouterr().out


def test_push_offline_fails_in_one_line_after_writing(tmp_path):
    out = tmp_path / "ref"
    proc = subprocess.run([sys.executable, "-m", "dataset_builders.reference_attributes", "--out", str(out),
                           "--push-to-hub", "someone/reference"], env=_env(HF_TOKEN=""), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "cannot push" in proc.stderr
    assert (out / "README.md").is_file()
