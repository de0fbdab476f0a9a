"""A weights file written by others, checked before any library reads it: ``--lora``, ``--unet``
and single-file checkpoints (``--model FILE``) all pass :func:`check_weights_file` first.

What is checked, each failure one line naming the file (:class:`MalformedSpecError`):

* it is a regular file, opened without blocking (a FIFO or a device would hang a reader);
* its size is sane: at least a header, at most :data:`MAX_FILE_BYTES`;
* a safetensors file's header, read with limits (the format: an 8-byte little-endian length,
  that many bytes of JSON, then the tensors' bytes): the length at most
  :data:`MAX_HEADER_BYTES` (safetensors' own limit) and within the file, the JSON nested at
  most :data:`MAX_HEADER_DEPTH` deep (scanned before parsing: no recursion), every tensor with a
  known dtype, a shape of non-negative sizes, and data offsets that lie in the file, match the
  shape, and tile the data without gap or overlap (what safetensors itself requires);
* every floating-point tensor finite: a NaN or an infinity in a LoRA or a UNet makes every image
  black, and an audit of black images measures nothing. The scan reads the file once through a
  memory map, in chunks, with numpy bit masks (no torch: bfloat16 and float8 too);
* a GGUF file's magic number and version, and that the gguf reader can list its tensors.

Standard library and numpy only: the refusals come before torch or diffusers load. A file's scan
is remembered for this process by (path, inode, size, modification time), so checking it early
and again when it is resolved costs one read.
"""

from __future__ import annotations

import math
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmark.contract.bounded_json import RefusedJson, load_bounded_json

from .errors import MalformedSpecError

__all__ = ["WeightsHeader", "check_weights_file", "read_header", "SAFETENSORS_DTYPE_BITS", "MAX_FILE_BYTES",
           "MAX_HEADER_BYTES", "MAX_HEADER_DEPTH", "GGUF_SUFFIX", "SAFETENSORS_SUFFIX"]

SAFETENSORS_SUFFIX, GGUF_SUFFIX = ".safetensors", ".gguf"
#: the largest weights file read: a FLUX checkpoint in float32 is about 48 GB
MAX_FILE_BYTES = 256 * 2**30
#: safetensors' own limit on the header (``MAX_HEADER_SIZE`` in its Rust crate)
MAX_HEADER_BYTES = 100_000_000
#: {name: {"dtype", "shape": [...], "data_offsets": [...]}} is 3 levels; ``__metadata__`` holds strings
MAX_HEADER_DEPTH = 4
MAX_RANK = 16
#: bits per element of each safetensors dtype
SAFETENSORS_DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "C64": 64, "I64": 64, "U64": 64,
    "F64": 64,
}
#: floating-point dtypes whose non-finite values are all-ones exponents: (unsigned view, exponent mask);
#: float8 E4M3 has no infinity and one NaN pattern per sign (0x7F / 0xFF)
_NONFINITE_MASK = {"F16": (np.uint16, 0x7C00), "BF16": (np.uint16, 0x7F80), "F32": (np.uint32, 0x7F800000),
                   "F64": (np.uint64, 0x7FF0000000000000), "F8_E5M2": (np.uint8, 0x7C), "F8_E4M3": (np.uint8, 0x7F)}
_SCAN_CHUNK_BYTES = 1 << 26
_GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class WeightsHeader:
    """What the header of a checked file says: ``tensors`` name -> (dtype, shape), ``metadata``
    (safetensors' ``__metadata__``), ``format`` (``safetensors`` or ``gguf``), ``size`` in bytes."""

    path: Path
    format: str
    size: int
    tensors: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)

    def shapes(self) -> dict[str, tuple]:
        return {name: shape for name, (_, shape) in self.tensors.items()}


def _refuse(what: str, path: Path, why: str) -> MalformedSpecError:
    return MalformedSpecError(f"{what} {path} {why}: refused before loading")


def _open_regular(path: Path, what: str) -> tuple[int, os.stat_result]:
    """A read-only descriptor of ``path`` opened without blocking, once it is known to be a
    regular file of a sane size (a FIFO opened for reading waits for a writer forever)."""
    try:
        before = os.stat(path)
    except OSError as err:
        raise _refuse(what, path, f"cannot be read ({err.strerror or type(err).__name__})") from None
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
    if not stat.S_ISREG(before.st_mode):
        kind = next((name for test, name in kinds if test(before.st_mode)), "not a regular file")
        raise _refuse(what, path, f"is {kind}, not a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise _refuse(what, path, f"cannot be read ({err.strerror or type(err).__name__})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # replaced between the two looks
        os.close(fd)
        raise _refuse(what, path, "is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        os.close(fd)
        raise _refuse(what, path, f"is {info.st_size:,} bytes, more than the {MAX_FILE_BYTES // 2**30} GiB a weights "
                                  "file may have")
    return fd, info


def _read_exactly(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _tensor_entry(name: str, entry, data_size: int) -> tuple[str, tuple, int, int] | str:
    """(dtype, shape, begin, end) of one header entry, or why it is malformed."""
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        return "is not {dtype, shape, data_offsets}"
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in SAFETENSORS_DTYPE_BITS:
        return f"has the unknown dtype {str(dtype)[:40]!r}"
    if (not isinstance(shape, list) or len(shape) > MAX_RANK
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        return f"has a shape that is not a list of at most {MAX_RANK} sizes >= 0"
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
        return "has data_offsets that are not [begin, end]"
    begin, end = offsets
    if not 0 <= begin <= end <= data_size:
        return f"lies at bytes [{begin}, {end}), outside the file's {data_size:,} bytes of tensor data"
    bits = math.prod(shape) * SAFETENSORS_DTYPE_BITS[dtype]
    if bits % 8 or bits // 8 != end - begin:
        return f"takes {end - begin:,} bytes, but a {dtype} tensor of shape {shape} takes {bits / 8:,g}"
    return dtype, tuple(shape), begin, end


def _safetensors_header(fd: int, path: Path, size: int, what: str) -> tuple[WeightsHeader, dict]:
    """The header of a safetensors file, checked (module docstring); and name -> (dtype, begin, end)
    of its tensors, offsets from the start of the file."""
    if size < 8:
        raise _refuse(what, path, f"is {size} bytes long: not a safetensors file (no 8-byte header length)")
    (n,) = struct.unpack("<Q", _read_exactly(fd, 8))
    if n > MAX_HEADER_BYTES:
        raise _refuse(what, path, f"is not a safetensors file its reader accepts: its header claims {n:,} bytes "
                                  f"(at most {MAX_HEADER_BYTES:,})")
    if n < 2 or 8 + n > size:
        raise _refuse(what, path, f"is truncated or not a safetensors file: its header claims {n:,} bytes, the "
                                  f"file has {size - 8:,} after the length")
    try:
        doc = load_bounded_json(_read_exactly(fd, n).rstrip(b" "), MAX_HEADER_DEPTH)
    except RefusedJson as err:
        raise _refuse(what, path, f"is not a safetensors file: its header is {err.reason}") from None
    if not isinstance(doc, dict):
        raise _refuse(what, path, "is not a safetensors file: its header is not a JSON object")
    metadata = doc.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _refuse(what, path, "has a __metadata__ that is not a map of strings")
    data_size, start = size - 8 - n, 8 + n
    tensors, spans = {}, {}
    for name, entry in doc.items():
        found = _tensor_entry(name, entry, data_size)
        if isinstance(found, str):
            raise _refuse(what, path, f"has a malformed tensor {name[:80]!r}: it {found}")
        dtype, shape, begin, end = found
        tensors[name], spans[name] = (dtype, shape), (dtype, start + begin, start + end)
    at = 0
    for name, (_, begin, end) in sorted(spans.items(), key=lambda kv: (kv[1][1], kv[1][2])):
        if begin - start != at:
            gap = "overlaps the tensor before it" if begin - start < at else "leaves a gap before it"
            raise _refuse(what, path, f"is malformed: tensor {name[:80]!r} {gap}")
        at = end - start
    if at != data_size:
        raise _refuse(what, path, f"is malformed: its tensors take {at:,} bytes, the file holds {data_size:,} after "
                                  "the header")
    return WeightsHeader(path, "safetensors", size, tensors, dict(metadata)), spans


def _nonfinite_counts(path: Path, spans: dict) -> dict[str, int]:
    """Tensor name -> how many of its values are NaN or infinite (only those with any)."""
    out: dict[str, int] = {}
    scanned = [(name, span) for name, span in spans.items() if span[0] in _NONFINITE_MASK and span[2] > span[1]]
    if not scanned:
        return out
    data = np.memmap(path, dtype=np.uint8, mode="r")
    try:
        for name, (dtype, begin, end) in scanned:
            view, mask = _NONFINITE_MASK[dtype]
            width = np.dtype(view).itemsize
            step = _SCAN_CHUNK_BYTES // width * width
            bad = 0
            for at in range(begin, end, step):
                words = data[at:min(at + step, end)].view(view)
                bad += int(np.count_nonzero((words & view(mask)) == view(mask)))
            if bad:
                out[name] = bad
    finally:
        del data
    return out


def _gguf_header(fd: int, path: Path, size: int, what: str) -> WeightsHeader:
    """A GGUF file: its magic and version here, then its tensor list from the gguf reader."""
    head = _read_exactly(fd, 8)
    if len(head) < 8 or head[:4] != _GGUF_MAGIC:
        raise _refuse(what, path, "is not a GGUF file (no GGUF magic number)")
    version = struct.unpack("<I", head[4:])[0]
    if version not in (2, 3):
        raise _refuse(what, path, f"is GGUF version {version}, which the gguf reader does not read (2 or 3)")
    try:
        from gguf import GGUFReader
    except ImportError:
        raise _refuse(what, path, "is a GGUF file, and reading it needs the gguf package: pip install gguf") from None
    try:
        reader = GGUFReader(str(path))
        tensors = {t.name: (t.tensor_type.name, tuple(int(d) for d in reversed(t.shape.tolist())))
                   for t in reader.tensors}
    except Exception as err:  # noqa: BLE001 - the reader raises many kinds on a damaged file
        first = (str(err).strip().splitlines() or [""])[0][:160]
        raise _refuse(what, path, f"is a damaged GGUF file ({type(err).__name__}{': ' + first if first else ''})") \
            from None
    return WeightsHeader(path, "gguf", size, tensors)


_CHECKED: dict[tuple, WeightsHeader] = {}


def _key(info: os.stat_result, path: Path) -> tuple:
    return str(path), info.st_ino, info.st_size, info.st_mtime_ns


def check_weights_file(path: str | Path, *, what: str = "weights file", finite: bool = True) -> WeightsHeader:
    """``path`` checked as the module docstring says (``finite``: and its floating-point tensors
    scanned for NaN and infinity); its header. One-line :class:`MalformedSpecError` naming the file
    on the first problem."""
    path = Path(path)
    fd, info = _open_regular(path, what)
    try:
        key = (*_key(info, path), finite)
        done = _CHECKED.get(key) or (None if finite else _CHECKED.get((*key[:-1], True)))
        if done is not None:
            return done
        if path.suffix == GGUF_SUFFIX:
            header = _gguf_header(fd, path, info.st_size, what)
        else:
            header, spans = _safetensors_header(fd, path, info.st_size, what)
            bad = _nonfinite_counts(path, spans) if finite else {}
            if bad:
                name, count = next(iter(bad.items()))
                more = f" (and {len(bad) - 1} more tensors)" if len(bad) > 1 else ""
                raise _refuse(what, path, f"holds NaN or infinite values: tensor {name[:80]!r} has {count:,}{more}; "
                                          "such weights make blank images")
    finally:
        os.close(fd)
    _CHECKED[key] = header
    return header


def read_header(path: str | Path, *, what: str = "weights file") -> WeightsHeader:
    """The checked header of ``path`` without the scan for non-finite values (a check that passed
    already did it)."""
    return check_weights_file(path, what=what, finite=False)
