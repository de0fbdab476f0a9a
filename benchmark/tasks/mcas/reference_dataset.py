"""The reference-attributes dataset builder (registered in this folder's ``__init__`` as
``reference_attributes``): the ten Monk Skin Tone swatches (DALL-Eval's), the text gender
attributes of MCAS and Generated Bias, and (from an audited run) MCAS image attributes one
trusted model generated, so that audits of other models can score against the same images;
with its card and licence file.

    python -m dataset_builders.reference_attributes --out DIR [--from-run RUN_DIR [--allow-demo]]
        [--push-to-hub ORG/NAME [--create-pr]]

``datasets.load_dataset(DIR, "mst_swatches", split="train")`` (and ``mcas_text_attributes``,
``mcas_image_attributes``) then load it offline; audits read it with
:func:`benchmark.reference_attributes.load_reference_attributes`.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import datasets
import numpy as np
import pandas as pd

import benchmark
from benchmark.cli_types import output_folder
from benchmark.contract.digest import sha256_hex
from benchmark.annotate.skin_tone import ita, nearest_mst, rgb_to_lab
from benchmark.hub.access import push_folder
from benchmark.contract.atomic import write_bytes_atomic
from benchmark.extras import require
from benchmark.hub.dataset_layout import clear_folder, configs_yaml, size_category, write_card, write_split
from benchmark.contract.model_specs import is_builtin
from benchmark.papers import PAPERS
from benchmark.present.text import frame_table
from benchmark.tasks.dalleval.probes import monk_skin_tone_lab, monk_skin_tone_rgb
from benchmark.tasks.mcas.probes import mcas_text_attributes
from benchmark.tasks.mcas.reference_configs import ATTRIBUTE_SETS
from benchmark.tasks.mcas.reference_configs import IMAGE_ATTRIBUTES as MCAS_IMAGE_ATTRIBUTES
from benchmark.tasks.mcas.reference_configs import TEXT_ATTRIBUTES as MCAS_TEXT_ATTRIBUTES
from benchmark.probes.registry import load_config
from benchmark.reference_attributes import MST_SWATCHES, SPLIT, data_fingerprint
from benchmark.contract.run_folder import CONFIG_FILE, MANIFEST_FILE, RunFolderError, read_manifest, read_run_config

SWATCH_SIZE = 64  # pixels a side of each solid swatch image
MCAS_SUITE = "mcas_attributes"

LAB_SOURCE = "j-min/DallEval biases/skintone/TRUST/compute_ita.py (monk_tones)"
LICENCE_FILE = "LICENSE.md"  # the card's `license_link`
LAB_LICENCE = "MIT"
RGB_SOURCE = ("the Monk Skin Tone Scale's published colours, as in stanford-crfm/helm "
              "src/helm/benchmark/metrics/image_generation/skin_tone_metrics.py")
RGB_LICENCE = "Apache-2.0"
TEXT_PAPERS = ["MCAS Table 1", "Generated Bias Table 1"]

#: as DALL-Eval cites the scale (its reference [40])
MONK_BIBTEX = """@misc{monk2022mst,
  title        = {Monk Skin Tone Scale},
  author       = {Monk, Ellis},
  howpublished = {\\url{https://skintone.google}},
  year         = {2022}
}"""

SWATCH_FEATURES = datasets.Features({
    "image": datasets.Image(), "mst": datasets.Value("int32"), "srgb_hex": datasets.Value("string"),
    "srgb_r": datasets.Value("uint8"), "srgb_g": datasets.Value("uint8"), "srgb_b": datasets.Value("uint8"),
    "cielab_l": datasets.Value("float64"), "cielab_a": datasets.Value("float64"),
    "cielab_b": datasets.Value("float64"), "ita": datasets.Value("float64"), "source": datasets.Value("string"),
    "licence": datasets.Value("string"),
})
TEXT_FEATURES = datasets.Features({
    "attribute_set": datasets.Value("string"), "gender": datasets.Value("string"), "text": datasets.Value("string"),
    "role": datasets.Value("string"), "papers": datasets.List(datasets.Value("string")),
})
IMAGE_FEATURES = datasets.Features({
    "image": datasets.Image(), "probe_id": datasets.Value("string"), "attribute_set": datasets.Value("string"),
    "gender": datasets.Value("string"), "keyword": datasets.Value("string"), "prompt": datasets.Value("string"),
    "seed": datasets.Value("int64"), "sample_index": datasets.Value("int32"), "sha256": datasets.Value("string"),
    "model_id": datasets.Value("string"), "revision": datasets.Value("string"),
    "settings": datasets.Value("string"),
})


def _png(rgb: tuple[int, int, int], size: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (size, size), tuple(int(v) for v in rgb)).save(buf, format="PNG")
    return buf.getvalue()


# --------------------------------------------------------------------------- configs


def swatch_table(size: int = SWATCH_SIZE) -> datasets.Dataset:
    """The ten Monk swatches from the package's DALL-Eval config: CIELAB from DALL-Eval's
    ITA code, sRGB from the scale's published colours, ITA of the CIELAB values, and a
    solid image of the sRGB colour whose own ITA must map back to its tone."""
    lab, rgb = monk_skin_tone_lab(), monk_skin_tone_rgb()
    if lab.shape != rgb.shape:
        raise ValueError(f"the DALL-Eval config has {len(lab)} CIELAB and {len(rgb)} sRGB swatches")
    swatch_ita = [ita(L, b) for L, _, b in lab]
    rows = []
    for tone, (L, a, b), colour in zip(range(1, len(lab) + 1), lab, rgb):
        r, g, bl = (int(v) for v in colour)
        L_img, _, b_img = rgb_to_lab(np.array([r, g, bl], np.uint8))
        if nearest_mst(ita(L_img, b_img), swatch_ita) != tone:
            raise ValueError(f"the sRGB swatch of MST {tone} does not map back to MST {tone} by ITA")
        rows.append({"image": {"bytes": _png((r, g, bl), size), "path": f"mst_{tone:02d}.png"}, "mst": tone,
                     "srgb_hex": f"#{r:02x}{g:02x}{bl:02x}", "srgb_r": r, "srgb_g": g, "srgb_b": bl,
                     "cielab_l": float(L), "cielab_a": float(a), "cielab_b": float(b),
                     "ita": float(swatch_ita[tone - 1]),
                     "source": f"CIELAB: {LAB_SOURCE}; sRGB: {RGB_SOURCE}",
                     "licence": f"CIELAB values {LAB_LICENCE}; sRGB values {RGB_LICENCE}"})
    return datasets.Dataset.from_list(rows, features=SWATCH_FEATURES)


def text_table() -> datasets.Dataset:
    """The text gender attributes (MCAS Table 1 = Generated Bias Table 1) from the package's MCAS config."""
    frame = mcas_text_attributes(load_config("mcas"))
    rows = [{"attribute_set": r["attribute_set"], "gender": r["gender"], "text": r["text"], "role": r["role"],
             "papers": list(TEXT_PAPERS)} for r in frame.to_dict("records")]
    return datasets.Dataset.from_list(rows, features=TEXT_FEATURES)


def _builtin_models(config: dict, manifest: pd.DataFrame) -> list[str]:
    found = [str(config.get("model", {}).get("spec") or config.get("model", {}).get("model_id"))] \
        if is_builtin(config.get("model")) else []
    found += [m for m in sorted(set(manifest["model_id"].astype(str))) if is_builtin(m) and m not in found]
    return found


def image_table(run_dir: str | Path, *, allow_demo: bool = False) -> tuple[datasets.Dataset, dict]:
    """(rows, info) of the ``mcas_attributes`` images of an audited run folder; refuses a
    folder without them, and one made by a built-in random model unless ``allow_demo``."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"--from-run {run_dir}: no such folder")
    try:
        config = read_run_config(run_dir)
    except RunFolderError as exc:
        raise ValueError(str(exc)) from None
    if config is None or not (run_dir / MANIFEST_FILE).is_file():
        raise ValueError(f"--from-run {run_dir} is not a run folder with images (no {CONFIG_FILE} or {MANIFEST_FILE}); "
                         f"make one with `t2ibench run --suites {MCAS_SUITE} ...`")
    manifest = read_manifest(run_dir)
    need = {"suite", "probe_id", "attribute_set", "gender", "keyword", "prompt", "seed", "sha256", "model_id",
            "revision", "settings", "image_path"}
    rows = manifest[manifest["suite"] == MCAS_SUITE] if "suite" in manifest.columns else manifest.iloc[:0]
    if rows.empty:
        raise ValueError(f"--from-run {run_dir} has no {MCAS_SUITE} images; generate them with "
                         f"`t2ibench run --suites {MCAS_SUITE} ...`")
    missing = sorted(need - set(rows.columns))
    if missing:
        raise ValueError(f"--from-run {run_dir}: its manifest lacks the columns {missing}")
    builtin = _builtin_models(config, manifest)
    if builtin and not allow_demo:
        raise ValueError(f"--from-run {run_dir} was made by the built-in random model {builtin[0]}: its images are "
                         "meaningless as a reference (pass --allow-demo to build one anyway, for tests)")
    sets = set(rows["attribute_set"].astype(str))
    if sets != set(ATTRIBUTE_SETS):
        raise ValueError(f"--from-run {run_dir}: its {MCAS_SUITE} images must cover both attribute sets A and B, "
                         f"got {sorted(sets)}")

    out = []
    for r in rows.sort_values("probe_index" if "probe_index" in rows.columns else "probe_id").to_dict("records"):
        rel = str(r.get("image_path") or "")
        path = run_dir / rel
        if not rel or not path.is_file():
            raise ValueError(f"--from-run {run_dir}: the image of {r['probe_id']} is missing ({path})")
        data = path.read_bytes()
        if sha256_hex(data) != str(r["sha256"]):
            raise ValueError(f"--from-run {run_dir}: {rel} does not match the sha256 the manifest records for "
                             f"{r['probe_id']} (the run folder was changed after generation)")
        out.append({"image": {"bytes": data, "path": Path(rel).name}, "probe_id": str(r["probe_id"]),
                    "attribute_set": str(r["attribute_set"]), "gender": str(r["gender"]),
                    "keyword": str(r["keyword"]), "prompt": str(r["prompt"]), "seed": int(r["seed"]),
                    "sample_index": int(r["sample_index"]) if "sample_index" in r else 0,
                    "sha256": str(r["sha256"]), "model_id": str(r["model_id"]), "revision": str(r["revision"]),
                    "settings": str(r["settings"])})
    table = datasets.Dataset.from_list(out, features=IMAGE_FEATURES)
    frame = pd.DataFrame([{k: v for k, v in r.items() if k != "image"} for r in out])
    info = {"run_config": config, "builtin": builtin, "n_images": len(out),
            "counts": frame.groupby(["attribute_set", "gender", "keyword"], sort=False).size().reset_index(name="n"),
            "models": sorted(set(zip(frame["model_id"], frame["revision"]))),
            "settings": sorted(set(frame["settings"]))}
    return table, info


# --------------------------------------------------------------------------- card


def _md_table(frame: pd.DataFrame) -> str:
    return frame_table(frame)


def licence_text(model_id: str | None) -> str:
    """The licence of each config (the card's Licence section and LICENSE.md); ``model_id``:
    the model that generated the image attributes, if the build has them."""
    return (f"Per config: `{MST_SWATCHES}` CIELAB values {LAB_LICENCE} (DALL-Eval's release), sRGB values "
            f"{RGB_LICENCE} (HELM); the Monk Skin Tone Scale itself is Ellis Monk's, published with Google at "
            f"skintone.google: check its terms there. `{MCAS_TEXT_ATTRIBUTES}`: words printed in the papers, listed "
            "for research use."
            + (f" `{MCAS_IMAGE_ATTRIBUTES}`: the images were generated by `{model_id}` and inherit that model's "
               "licence and terms of use; check them before reusing the images." if model_id else ""))


def _card_header(title: str, swatches: datasets.Dataset, texts: datasets.Dataset, image_info: dict | None,
                 configs: dict) -> dict:
    """The YAML header of the card."""
    return {
        "pretty_name": title,
        # Several licences, one per config (LICENSE.md): the Hub's spelling is `other` + name + link.
        "license": "other",
        "license_name": "per-config-mit-apache-2.0-and-model-terms" if image_info else "per-config-mit-apache-2.0",
        "license_link": LICENCE_FILE,
        "language": ["en"],
        "task_categories": ["text-to-image"],
        "tags": ["bias", "fairness", "gender", "skin-tone", "monk-skin-tone", "text-to-image", "t2i-bias-benchmark"],
        "size_categories": [size_category(swatches.num_rows + texts.num_rows + (image_info or {}).get("n_images", 0))],
        "configs": configs_yaml(configs, default=MST_SWATCHES),
    }


def _image_attributes_section(image_info: dict) -> list[str]:
    """The card's section on the generated attribute images."""
    cfg = image_info["run_config"]
    partial = image_info["n_images"] != 128
    models = ", ".join(f"`{m}` revision `{r}`" for m, r in image_info["models"])
    settings = image_info["settings"]
    settings_md = ("```json\n" + json.dumps(json.loads(settings[0]), indent=2, sort_keys=True) + "\n```"
                   if len(settings) == 1 else f"{len(settings)} different settings; see the `settings` column.")
    return [
        f"## `{MCAS_IMAGE_ATTRIBUTES}`",
        f"{image_info['n_images']} images generated by {models} in a t2i-bias-benchmark run "
        f"(package version {cfg.get('package_version', '?')}, suite `{MCAS_SUITE}`"
        + (f", `--limit {cfg.get('limit_per_suite')}`" if cfg.get("limit_per_suite") else "") + ")."
        + (" **Partial**: the papers' protocol has 128 images (16 per prompt)." if partial else ""),
        _md_table(image_info["counts"]),
        "Fields: `image` (PNG as generated, byte for byte), `probe_id`, `attribute_set` (A = male, B = female: A "
        "first, so a positive association leans male, as in the papers), `gender`, `keyword` (the person word of "
        "the prompt), `prompt`, `seed`, `sample_index`, `sha256` (of the PNG bytes), `model_id`, `revision`, "
        "`settings` (the generation settings, JSON).",
        "Generation settings:",
        settings_md,
    ]


def _text_and_swatch_sections(texts: datasets.Dataset, swatches: datasets.Dataset) -> list[str]:
    """The card's sections on the text attributes and the Monk Skin Tone swatches."""
    return [
        f"## `{MCAS_TEXT_ATTRIBUTES}`",
        _md_table(texts.to_pandas().groupby(["attribute_set", "gender"], sort=False)["text"]
                  .apply(lambda t: ", ".join(t)).reset_index()),
        "Fields: `attribute_set`, `gender`, `text`, `role` (`attribute_a_text` / `attribute_b_text`, the input role "
        "in the mcas score), `papers` (where the word is printed).",
        f"## `{MST_SWATCHES}`",
        _md_table(swatches.to_pandas()[["mst", "srgb_hex", "cielab_l", "cielab_a", "cielab_b", "ita"]]
                  .round({"ita": 2})),
        f"Fields: `image` ({SWATCH_SIZE} x {SWATCH_SIZE} solid PNG of the sRGB colour), `mst` (1 lightest .. 10 "
        "darkest), `srgb_hex`, `srgb_r`, `srgb_g`, `srgb_b`, `cielab_l`, `cielab_a`, `cielab_b` (L*, a*, b*), `ita` "
        "(degrees, atan((L* - 50) / b*) x 180 / pi of the CIELAB values), `source`, `licence`.",
        f"Sources: CIELAB from {LAB_SOURCE} ({LAB_LICENCE}); sRGB from {RGB_SOURCE} ({RGB_LICENCE}). The sRGB colours "
        "converted to CIELAB (OpenCV, D65) lie within 1 unit of the CIELAB values, and the ITA of every swatch image "
        "maps back to its own tone (checked when building).",
        "DALL-Eval's released code does not compute ITA this way: it converts a BGR image as if it were RGB to "
        "OpenCV's 8-bit Lab and takes ITA of the 8-bit values, through which these ten swatches come out as MST "
        "5, 5, 5, 5, 5, 5, 6, 6, 6, 4; skin-tone scores made with it are not comparable with scores made on CIELAB "
        "(`SkinToneAnnotator(..., ita_variant=\"dalleval-release\")` reproduces it for comparison).",
    ]


def reference_card(swatches: datasets.Dataset, texts: datasets.Dataset, image_info: dict | None,
                   fingerprint: str) -> tuple[dict, str]:
    """(YAML header, Markdown body) of the dataset card."""
    configs = {MST_SWATCHES: [SPLIT], MCAS_TEXT_ATTRIBUTES: [SPLIT]}
    if image_info is not None:
        configs[MCAS_IMAGE_ATTRIBUTES] = [SPLIT]
    model = (image_info or {}).get("run_config", {}).get("model", {}) if image_info else {}
    model_id = model.get("model_id") or model.get("spec") or "unknown"
    demo = bool(image_info and image_info["builtin"])
    title = (f"Reference attributes for text-to-image bias audits ({model_id})" if image_info
             else "Reference attributes for text-to-image bias audits")
    header = _card_header(title, swatches, texts, image_info, configs)
    mcas, gb, dalleval = PAPERS["mcas"], PAPERS["diffusion_bias"], PAPERS["dalleval"]
    body = [f"# {title}"]
    if demo:
        body.append(f"**Demo build: the images are meaningless.** The `{MCAS_IMAGE_ATTRIBUTES}` images were made by "
                    f"the built-in random-weight model `{image_info['builtin'][0]}` (`--allow-demo`), which exists to "
                    "test the pipeline offline. Do not score any audit against them.")
    body += [
        "Fixed references for auditing text-to-image models for gender and skin-tone bias with "
        f"t2i-bias-benchmark (package version {benchmark.__version__}): the ten Monk Skin Tone swatches, the text "
        "gender attributes of MCAS and Generated Bias"
        + (", and MCAS image attributes generated by one model." if image_info else "."),
        "## Load",
        "```python\nfrom datasets import load_dataset\n\n"
        f"swatches = load_dataset(\"ORG/NAME\", \"{MST_SWATCHES}\", split=\"train\")\n"
        f"texts = load_dataset(\"ORG/NAME\", \"{MCAS_TEXT_ATTRIBUTES}\", split=\"train\")\n"
        + (f"images = load_dataset(\"ORG/NAME\", \"{MCAS_IMAGE_ATTRIBUTES}\", split=\"train\")\n" if image_info else "")
        + "\n# or, for an audit (identity = source, resolved revision, fingerprint of the data files):\n"
        "from benchmark.reference_attributes import load_reference_attributes\n"
        "ref = load_reference_attributes(\"ORG/NAME\", revision=\"main\")\n```",
        f"Fingerprint of the data files (sha256, recipe in `benchmark.reference_attributes.data_fingerprint`): "
        f"`{fingerprint}`.",
        "## What each config is for",
        f"**`{MCAS_IMAGE_ATTRIBUTES}`**: MCAS's image-image (II) and image-text (ITP) components, and Generated Bias's "
        "Diffusion Bias and Bias Amplification built on them, compare a model's target images with image attributes: "
        "images standing for men (set A) and women (set B). In the papers' protocol each audited model generates its "
        "own attribute images (MCAS, Curating the Attributes and Targets: 8 prompts x 16 images = 128), so two models' "
        "II are measured against two different references. Scoring several models against one published set of "
        "attribute images makes II and ITP comparable across models; the model's own attribute images remain the "
        "papers' protocol. The text-attribute components (ITA, TT) do not use these images.",
        f"**`{MCAS_TEXT_ATTRIBUTES}`**: the text attributes of MCAS Table 1 and Generated Bias Table 1 (the same "
        "words in both), embedded as text by MCAS's image-text (ITA) and text-text (TT) components.",
        f"**`{MST_SWATCHES}`**: the Monk Skin Tone scale, the reference of DALL-Eval's skin-tone step (DALL-Eval "
        "Sec. 4.2.2-4.2.3): a face's Individual Typology Angle (ITA) is mapped to the swatch with the nearest ITA. "
        "`benchmark.annotate.skin_tone.SkinToneAnnotator.from_reference(...)` reads its swatches from here.",
        "## A reference is one model's depiction of gender, not ground truth",
        "The images of `mcas_image_attributes` show what one model draws for \"an image of a man\", \"an image of a "
        "woman\" and so on, with the gender taken from the prompt, as in the papers (Generated Bias Sec. 5.1: no human "
        "or classifier check). They carry that model's own stereotypes, and they depict gender as binary, as the "
        "papers' attribute sets do; they say nothing about anyone's identity. Scores against a reference measure a "
        "model's association relative to that depiction; compare only scores made against the same reference "
        "(the same fingerprint).",
    ]
    if image_info is not None:
        body += _image_attributes_section(image_info)
    body += _text_and_swatch_sections(texts, swatches) + [
        "## Licence",
        licence_text(model_id if image_info else None),
        "## Citation",
        "MCAS, Generated Bias, DALL-Eval and the Monk Skin Tone Scale:",
        "```bibtex\n" + "\n\n".join([mcas.bibtex, gb.bibtex, dalleval.bibtex, MONK_BIBTEX]) + "\n```",
    ]
    return header, "\n\n".join(body)


# --------------------------------------------------------------------------- build


def _check_out(out: str | Path, from_run: str | Path | None) -> None:
    """Refuse an --out that would replace a run folder (they have a README.md card too)."""
    out = Path(out).resolve()
    if (out / CONFIG_FILE).exists():
        raise ValueError(f"--out {out} is a run folder; choose another folder for the dataset")
    if from_run is not None:
        run = Path(from_run).resolve()
        if out == run or out in run.parents or run in out.parents:
            raise ValueError(f"--out {out} overlaps the run folder {run}; choose a folder outside it")


def build_reference_dataset(out: str | Path, *, from_run: str | Path | None = None, allow_demo: bool = False) -> dict:
    """Write the dataset folder; returns ``{configs: {name: rows}, fingerprint, builtin}``.
    Every input is checked before the folder is touched."""
    # The swatch images and their colour check need Pillow and OpenCV: one line in the base install.
    require("PIL", "cv2", purpose="build the reference attributes dataset (swatch images and their colour check)")
    swatches = swatch_table()
    texts = text_table()
    images, info = image_table(from_run, allow_demo=allow_demo) if from_run is not None else (None, None)
    _check_out(out, from_run)
    folder = clear_folder(out)
    write_split(folder, MST_SWATCHES, SPLIT, swatches)
    write_split(folder, MCAS_TEXT_ATTRIBUTES, SPLIT, texts)
    counts = {MST_SWATCHES: swatches.num_rows, MCAS_TEXT_ATTRIBUTES: texts.num_rows}
    if images is not None:
        write_split(folder, MCAS_IMAGE_ATTRIBUTES, SPLIT, images)
        counts[MCAS_IMAGE_ATTRIBUTES] = images.num_rows
    fingerprint = data_fingerprint(folder, {name: [f"{name}/{SPLIT}-*.parquet"] for name in counts})
    header, body = reference_card(swatches, texts, info, fingerprint)
    write_card(folder, header, body)
    model = (info or {}).get("run_config", {}).get("model", {})
    model_id = (model.get("model_id") or model.get("spec") or "unknown") if info else None
    write_bytes_atomic(folder / LICENCE_FILE, f"# Licence\n\n{licence_text(model_id)}\n".encode())
    return {"configs": counts, "fingerprint": fingerprint, "builtin": (info or {}).get("builtin", [])}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=output_folder,
                        help="folder to write (replaced if it holds an earlier build)")
    parser.add_argument("--from-run", metavar="RUN_DIR",
                        help=f"an audited run folder whose {MCAS_SUITE} images become {MCAS_IMAGE_ATTRIBUTES}")
    parser.add_argument("--allow-demo", action="store_true",
                        help="accept a run made by a built-in random model (the card then says its images are "
                             "meaningless)")
    parser.add_argument("--push-to-hub", metavar="ORG/NAME", help="publish the folder as a Hub dataset")
    parser.add_argument("--create-pr", action="store_true", help="with --push-to-hub: open a pull request")


def run(args: argparse.Namespace) -> int:
    if args.create_pr and not args.push_to_hub:
        raise ValueError("--create-pr needs --push-to-hub")
    if args.allow_demo and not args.from_run:
        raise ValueError("--allow-demo needs --from-run")
    summary = build_reference_dataset(args.out, from_run=args.from_run, allow_demo=args.allow_demo)
    for name, n in summary["configs"].items():
        print(f"  {name:<22} {n:>4} rows")
    print(f"wrote {args.out} (fingerprint {summary['fingerprint']})"
          + (" [demo: images from a built-in random model, meaningless]" if summary["builtin"] else ""))
    if args.push_to_hub:
        url = push_folder(args.out, args.push_to_hub, repo_type="dataset", create_pr=args.create_pr,
                          commit_message="Reference attributes from t2i-bias-benchmark")
        print(f"pushed to {url}")
    return 0
