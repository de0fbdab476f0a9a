"""The probe dataset folder loads offline with `datasets` exactly as built, and its
card is a valid Hub card; pushing without a token or a network fails with one line."""

import os
import subprocess
import sys

import datasets
import pytest
import yaml

from benchmark.probes.dataset import build_probe_dataset


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("probes")
    tables = build_probe_dataset(out)
    return out, tables


def _card(folder):
    text = (folder / "README.md").read_text()
    assert text.startswith("---\n")
    header, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(header), body


def test_every_config_loads_offline_with_datasets(built, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder, tables = built
    for name, df in tables.items():
        ds = datasets.load_dataset(str(folder), name, split="test")
        assert ds.num_rows == len(df), name
        assert ds.column_names == list(df.columns), name
        assert ds["probe_id"] == df["probe_id"].tolist()
        assert ds["prompt"] == df["prompt"].tolist()
        assert ds["seed"] == df["seed"].tolist()


def test_card_lists_every_config_with_its_paper(built):
    folder, tables = built
    header, body = _card(folder)
    assert [c["config_name"] for c in header["configs"]] == list(tables)
    assert sum(bool(c.get("default")) for c in header["configs"]) == 1
    assert header["license"] == "mit" and "text-to-image" in header["task_categories"]
    for name in tables:
        assert f"### `{name}`" in body
    for cite in ("zhang2024gep", "cho2023dalleval", "wan2024pst", "mandal2023mcas"):
        assert cite in body


def test_variant_config_is_recorded_in_the_card(tmp_path):
    from benchmark.probes import load_config

    cfg = load_config("dalleval")
    variant = tmp_path / "dalleval_small.yaml"
    cfg["professions"] = cfg["professions"][:2]
    cfg["include_bare_prompts"] = False
    cfg["n_images_per_prompt"] = 2
    variant.write_text(yaml.safe_dump(cfg))
    tables = build_probe_dataset(tmp_path / "out", ["dalleval_bias"], {"dalleval": str(variant)})
    assert len(tables["dalleval_bias"]) == 3 * 2 * 2  # 3 indicators x 2 professions x 2 images
    _, body = _card(tmp_path / "out")
    assert "dalleval_small.yaml" in body and list(tables) == ["dalleval_bias"]
    ds = datasets.load_dataset(str(tmp_path / "out"), "dalleval_bias", split="test")
    assert ds.num_rows == 12


def test_refuses_to_clear_a_foreign_folder(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a dataset folder"):
        build_probe_dataset(tmp_path, ["gep_neutral"])
    assert (tmp_path / "precious.txt").exists()


def _push(tmp_path, **env):
    full_env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT")}
    full_env.update(env, HF_HOME=str(tmp_path / "hf_home"))
    return subprocess.run([sys.executable, "-m", "dataset_builders.probes", "--out", str(tmp_path / "p"),
                           "--suites", "gep_neutral", "--push-to-hub", "someorg/probes"],
                          capture_output=True, text=True, env=full_env, timeout=120)


@pytest.mark.parametrize("env,message", [
    ({}, "no Hugging Face token"),
    ({"HF_TOKEN": "hf_notreal", "HF_HUB_OFFLINE": "1"}, "HF_HUB_OFFLINE is set"),
    # A closed local port stands in for "no network".
    ({"HF_TOKEN": "hf_notreal", "HF_ENDPOINT": "http://127.0.0.1:9"}, "no connection to the Hugging Face Hub"),
])
def test_push_without_token_or_network_fails_with_one_line(tmp_path, env, message):
    proc = _push(tmp_path, **env)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and message in err[0], proc.stderr
    assert "wrote" in proc.stdout  # the folder itself was built before the push failed


def test_a_folder_rebuilt_in_place_loads_its_new_rows(tmp_path, monkeypatch):
    # datasets caches a local folder by name and card YAML: the card's download sizes
    # must change with the data, or the rebuilt folder loads its stale cached copy.
    import pandas as pd

    from benchmark.hub.dataset_layout import clear_folder, configs_yaml, write_card, write_split

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")
    out = tmp_path / "labels"
    counts = []
    for n in (3, 5):
        clear_folder(out)
        write_split(out, "items", "train", pd.DataFrame({"item_id": [f"i{k}" for k in range(n)], "answer": ["yes"] * n}))
        write_card(out, {"configs": configs_yaml({"items": ["train"]}, default="items")}, "# test")
        counts.append(datasets.load_dataset(str(out), "items", split="train").num_rows)
    assert counts == [3, 5]
    card = yaml.safe_load((out / "README.md").read_text().split("---")[1])
    assert card["dataset_info"]["download_size"] == (out / "items" / "train-00000-of-00001.parquet").stat().st_size


def test_card_is_a_hub_dataset_card(built):
    from huggingface_hub import DatasetCard, DatasetCardData

    folder, tables = built
    card = DatasetCard.load(folder / "README.md")
    assert isinstance(card.data, DatasetCardData)
    assert card.data.license == "mit" and card.data.pretty_name
    assert [c["config_name"] for c in card.data.configs] == list(tables)
    sizes = {e["config_name"]: e["download_size"] for e in card.data.dataset_info}
    assert sizes == {n: (folder / n / "test-00000-of-00001.parquet").stat().st_size for n in tables}
    assert card.text.lstrip().startswith("#")


def test_card_header_that_yaml_cannot_hold_is_refused(tmp_path):
    from benchmark.hub.dataset_layout import dataset_card, write_card

    with pytest.raises(ValueError, match="tags: set values cannot be written"):
        dataset_card({"tags": {"a", "b"}}, "# body")
    with pytest.raises(ValueError, match=r"configs\[0\].split: tuple"):
        dataset_card({"configs": [{"split": ("test",)}]}, "# body")
    with pytest.raises(ValueError, match="mapping"):
        dataset_card(["license: mit"], "# body")
    path = write_card(tmp_path, {"license": "mit", "pretty_name": "x", "yes_string": "yes"}, "# t\n\ntext")
    text = path.read_text()
    assert text.startswith("---\nlicense: mit\npretty_name: x\n")  # the header's own key order
    assert yaml.safe_load(text.split("---")[1])["yes_string"] == "yes"  # quoted, not read back as True


def test_card_yaml_carries_what_the_hub_validates(built):
    # size bucket of all rows, the features / splits / sizes of every config (as the Hub
    # writes them on upload), no untyped column, and tables that render as tables.
    from markdown_tables import broken_table_lines

    folder, tables = built
    header, body = _card(folder)
    total = sum(len(df) for df in tables.values())
    assert total == 15_129 and header["size_categories"] == ["10K<n<100K"]
    assert header["task_categories"] == ["text-to-image"] and header["license"] == "mit"
    infos = {e["config_name"]: e for e in header["dataset_info"]}
    assert set(infos) == set(tables)
    for name, df in tables.items():
        info = infos[name]
        assert [f["name"] for f in info["features"]] == list(df.columns), name
        assert all(f.get("dtype") != "null" for f in info["features"]), name
        (split,) = info["splits"]
        assert split["name"] == "test" and split["num_examples"] == len(df) and split["num_bytes"] > 0
        assert info["dataset_size"] == split["num_bytes"]
    assert broken_table_lines(body) == []
    assert "| `paintskills_spatial` |" in body.split("## Suites")[1].split("##")[0]


def test_a_column_without_a_type_is_refused(tmp_path):
    import pandas as pd

    from benchmark.hub.dataset_layout import configs_yaml, write_card, write_split

    write_split(tmp_path, "items", "test", pd.DataFrame({"item_id": ["a", "b"], "relation": [None, None]}))
    with pytest.raises(ValueError, match="relation have no type"):
        write_card(tmp_path, {"configs": configs_yaml({"items": ["test"]})}, "# t")


def test_size_categories_follow_the_hub_buckets():
    from benchmark.hub.dataset_layout import size_category

    assert [size_category(n) for n in (0, 999, 1_000, 15_129, 99_999, 100_000, 2_000_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "10K<n<100K", "100K<n<1M", "1M<n<10M"]


def _header_and_body(folder):
    text = (folder / "README.md").read_text()
    header, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(header), body


def _check_hub_card(folder):
    """What the Hub validates and renders, for any of the builders' cards."""
    from markdown_tables import broken_table_lines

    header, body = _header_and_body(folder)
    assert header["task_categories"] and header["size_categories"]
    if header["license"] == "other":
        assert header["license_name"] and header["license_link"]
        assert (folder / header["license_link"]).is_file()
    infos = header["dataset_info"] if isinstance(header["dataset_info"], list) else [header["dataset_info"]]
    assert {e.get("config_name", "default") for e in infos} == {c["config_name"] for c in header["configs"]}
    for info in infos:
        assert info["features"] and all(f.get("dtype") != "null" for f in info["features"])
        assert all(s["num_examples"] > 0 and s["num_bytes"] > 0 for s in info["splits"])
    assert broken_table_lines(body) == []
    return header, body


def test_reference_and_paintskills_cards_are_complete_hub_cards(tmp_path, monkeypatch):
    from benchmark.tasks.paintskills.scene_dataset import build_dataset
    from benchmark.tasks.mcas.reference_dataset import build_reference_dataset

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    build_reference_dataset(tmp_path / "ref")
    header, _ = _check_hub_card(tmp_path / "ref")
    assert header["license_link"] == "LICENSE.md" and header["size_categories"] == ["n<1K"]
    assert "MIT" in (tmp_path / "ref" / "LICENSE.md").read_text()
    build_dataset(tmp_path / "ps", skills=["spatial", "object"], splits=["test"], limit=2, size=64, progress=False)
    header, _ = _check_hub_card(tmp_path / "ps")
    spatial = next(e for e in header["dataset_info"] if e["config_name"] == "spatial")
    assert {"name": "relation", "dtype": "string"} in spatial["features"]


BUILDERS_NEEDING_AUDIT = [
    ("dataset_builders.paintskills", ["--limit", "1"], "render PaintSkills scenes"),
    ("dataset_builders.reference_attributes", [], "build the reference attributes dataset"),
]


@pytest.mark.parametrize("module,args,purpose", BUILDERS_NEEDING_AUDIT,
                         ids=["paintskills", "reference_attributes"])
def test_builders_needing_the_audit_extra_refuse_in_one_line_in_the_base_install(module, args, purpose, tmp_path):
    # The base install lacks Pillow and OpenCV: hide them (an import of a None entry in
    # sys.modules fails, and find_spec reports it missing) and run the builder as `python -m`.
    code = ("import runpy, sys\n"
            "for name in ('PIL', 'cv2'):\n"
            "    sys.modules[name] = None\n"
            f"sys.argv = [{module!r}, '--out', {str(tmp_path / 'out')!r}, *{args!r}]\n"
            f"runpy.run_module({module!r}, run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"t2ibench: error: install t2i-bias-benchmark[audit] to {purpose} ("), lines[0]
    assert not (tmp_path / "out").exists()
