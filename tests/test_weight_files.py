"""Every weights file is checked before use (benchmark/models/weight_files.py, issue 51): a table of
bad files given as ``--lora``, ``--unet`` and single-file ``--model`` (with ``--base``), each refused in one line
naming the file, exit 2, no traceback, nothing written; a FIFO does not hang; the refusal comes
before torch loads; NaN / infinite tensors of every float dtype are found; good files pass."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
from cli_here import exit_status

from benchmark.models.errors import MalformedSpecError
from benchmark.models.weight_files import MAX_HEADER_BYTES, check_weights_file, read_header


def _safetensors(tensors: dict[str, tuple[str, list, bytes]], *, metadata=None, pad: int = 0) -> bytes:
    """A safetensors file's bytes from {name: (dtype, shape, raw bytes)}, laid out in order."""
    header, at, data = {}, 0, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        at, data = at + len(raw), data + raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode() + b" " * pad
    return struct.pack("<Q", len(text)) + text + data


GOOD = {"unet.a.lora_A.weight": ("F32", [4, 8], np.ones(32, np.float32).tobytes()),
        "unet.a.lora_B.weight": ("BF16", [8, 4], np.zeros(32, np.uint16).tobytes())}


def _bad_files(folder):
    """(file name, bytes, what the line says) for each damaged or hostile file."""
    good = _safetensors(GOOD)
    nan32 = np.ones(32, np.float32)
    nan32[5] = np.nan
    inf16 = np.ones(32, np.float16)
    inf16[0] = np.inf
    deep = b"[" * 100_000 + b"]" * 100_000
    overlapping = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                              "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}).encode()
    return [
        ("random.safetensors", os.urandom(4096), "its header claims"),
        ("half.safetensors", good[: len(good) // 2], "outside the file's"),
        ("header-cut.safetensors", good[:40], "is truncated or not a safetensors file"),
        ("huge-header.safetensors", struct.pack("<Q", 2**62) + b"{}", f"(at most {MAX_HEADER_BYTES:,})"),
        ("deep.safetensors", struct.pack("<Q", len(deep)) + deep, "nested 100000 levels deep"),
        ("empty.safetensors", b"", "is 0 bytes long"),
        ("not-json.safetensors", struct.pack("<Q", 4) + b"abcd", "its header is not valid JSON"),
        ("list.safetensors", struct.pack("<Q", 2) + b"[]", "its header is not a JSON object"),
        ("dtype.safetensors", _safetensors({"a": ("Q4", [2], b"\0\0")}), "the unknown dtype 'Q4'"),
        ("shape.safetensors", _safetensors({"a": ("F32", [3], b"\0" * 8)}), "a F32 tensor of shape [3] takes 12"),
        ("negative.safetensors", _safetensors({"a": ("F32", [-2], b"")}), "not a list of at most 16 sizes >= 0"),
        ("overlap.safetensors", struct.pack("<Q", len(overlapping)) + overlapping + b"\0" * 12,
         "overlaps the tensor before it"),
        ("tail.safetensors", good + b"\0" * 7, "the file holds"),
        ("nan.safetensors", _safetensors({"w": ("F32", [32], nan32.tobytes())}), "tensor 'w' has 1"),
        ("inf16.safetensors", _safetensors({"w": ("F16", [32], inf16.tobytes())}), "NaN or infinite values"),
    ]


def _code_and_lines(argv, capsys):
    code = exit_status(argv)
    _, err = capsys.readouterr()
    return code, [ln for ln in err.splitlines() if not ln.startswith("WARNING:")]


@pytest.mark.parametrize("option", ["--lora", "--unet", "--model"])
def test_each_bad_weights_file_is_one_line_naming_it(tmp_path, capsys, option):
    for name, data, message in _bad_files(tmp_path):
        file = tmp_path / name
        file.write_bytes(data)
        out = tmp_path / f"run-{name}"
        model = ["--model", file, "--base", "builtin:tiny-sd"] if option == "--model" else [
            "--model", "builtin:tiny-sd", option, file]
        code, lines = _code_and_lines(["run", *model, "--out", out, "--suites", "gep_neutral", "--limit", "1",
                                       "--quiet"], capsys)
        assert code == 2, (option, name, lines)
        assert len(lines) == 1 and lines[0].startswith("t2ibench: error: "), (name, lines)
        assert str(file) in lines[0] and message in lines[0], (name, lines[0])
        assert not out.exists()


def test_a_fifo_is_refused_at_once_not_read(tmp_path, capsys):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    code, lines = _code_and_lines(["run", "--model", "builtin:tiny-sd", "--out", tmp_path / "run", "--quiet",
                                   "--lora", fifo], capsys)
    assert code == 2 and len(lines) == 1 and "is a FIFO (named pipe), not a regular file" in lines[0], lines
    with pytest.raises(MalformedSpecError, match="is a folder, not a regular file"):
        check_weights_file(tmp_path)


def test_the_refusal_comes_before_torch_loads(tmp_path):
    bad = tmp_path / "nan.safetensors"
    bad.write_bytes(_bad_files(tmp_path)[-2][1])
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "benchmark.cli", "run", "--model",
                           "builtin:tiny-sd", "--out", str(tmp_path / "run"), "--lora", str(bad), "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    names = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    assert "argparse" in names and not names & {"torch", "diffusers", "transformers", "safetensors"}
    assert [ln for ln in proc.stderr.splitlines() if ln.startswith("t2ibench")] == [
        f"t2ibench: error: LoRA {bad} holds NaN or infinite values: tensor 'w' has 1; such weights make blank "
        "images: refused before loading"]


@pytest.mark.parametrize("dtype,view,bits", [("BF16", np.uint16, 0x7FC0), ("F32", np.uint32, 0x7F800000),
                                             ("F64", np.uint64, 0xFFF8000000000000), ("F8_E4M3", np.uint8, 0x7F),
                                             ("F8_E5M2", np.uint8, 0xFC)])
def test_non_finite_values_are_found_in_every_float_dtype(tmp_path, dtype, view, bits):
    values = np.zeros(64, view)
    file = tmp_path / f"{dtype}.safetensors"
    file.write_bytes(_safetensors({"ok": ("F32", [2], np.ones(2, np.float32).tobytes()),
                                   "w": (dtype, [8, 8], values.tobytes())}))
    assert check_weights_file(file).tensors["w"] == (dtype, (8, 8))  # all zeros: finite
    values[[3, 60]] = bits
    file.write_bytes(_safetensors({"ok": ("F32", [2], np.ones(2, np.float32).tobytes()),
                                   "w": (dtype, [8, 8], values.tobytes())}))
    with pytest.raises(MalformedSpecError, match="tensor 'w' has 2"):
        check_weights_file(file)


def test_good_files_pass_with_their_header(tmp_path):
    file = tmp_path / "good.safetensors"
    file.write_bytes(_safetensors(GOOD, metadata={"format": "pt"}, pad=5))
    header = check_weights_file(file)
    assert header.format == "safetensors" and header.metadata == {"format": "pt"}
    assert header.shapes() == {"unet.a.lora_A.weight": (4, 8), "unet.a.lora_B.weight": (8, 4)}
    assert read_header(file) is header  # remembered: one scan per file and process
    # a file safetensors itself wrote, integer and bool tensors included
    import torch
    from safetensors.torch import save_file

    written = tmp_path / "written.safetensors"
    save_file({"f": torch.randn(3, 5), "h": torch.randn(7).half(), "b": torch.ones(2, dtype=torch.bool),
               "i": torch.arange(6).reshape(2, 3), "e": torch.zeros(0, 4)}, str(written))
    assert check_weights_file(written).shapes() == {"f": (3, 5), "h": (7,), "b": (2,), "i": (2, 3), "e": (0, 4)}
