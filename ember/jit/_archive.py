"""Reading a jit archive (a zip file) without trusting it.

`ember.jit.save` writes a plain zip: ``code/graphs.json`` then ``data/<i>.npy`` per tensor, every
entry stored uncompressed (as ``torch.jit.save`` does). `Archive` reads exactly that, with its own
parser of the zip structure (the central directory is read once, without an object per entry), and
refuses anything else before allocating for it:

- compressed or encrypted entries: a stored entry's size is the bytes present in the file, so no
  entry can expand beyond the file (no decompression bombs);
- bytes before the first entry or after the end record (polyglot files, appended data), a
  comment, entries that overlap or leave gaps, a central directory that does not match the local
  headers, and sizes or offsets pointing outside the file;
- entry names other than ``code/graphs.json`` and ``data/0.npy`` ... ``data/<n-1>.npy`` for the
  n tensors the JSON declares (so no path traversal, duplicates or missing entries);
- a tensor whose ``.npy`` header declares a shape or dtype its bytes do not hold: the header is
  checked against the entry's size before the array is allocated, and the array is read straight
  into its buffer (peak memory: the tensors plus one JSON document).

Every refusal is `Refused` (the caller names the file); CRC-32 checksums are verified.

    with open_archive("m.pt", "m.pt") as archive:
        payload = archive.read_json()
        arr = archive.read_array(0, np.dtype("float32"))
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import struct
import zlib

import numpy as np

from ..serialization import describe_foreign, no_json_constant
from ._payload_check import Refused

GRAPHS = "code/graphs.json"
_DATA_NAME = re.compile(r"data/(0|[1-9][0-9]{0,8})\.npy")
_EOCD = struct.Struct("<4sHHHHIIH")           # end of central directory record (22 bytes)
_ZIP64_LOCATOR = struct.Struct("<4sIQI")      # zip64 end record locator (20 bytes)
_ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")   # zip64 end record (56 bytes)
_CENTRAL = struct.Struct("<4s6H3I5HII")       # central directory header (46 bytes)
_LOCAL = struct.Struct("<4s5H3I2H")           # local file header (30 bytes)
_NPY_HEADER_MAX = 1 << 12                     # what np.save writes for a plain array is ~128 bytes
_MAX_DIMS = 64
# the header np.save writes (format 1.0) for a plain array: its dict's repr, padded with spaces
_NPY_DICT = re.compile(r"\{'descr': '([<>|][a-z][0-9]{1,2})', 'fortran_order': (True|False), "
                       r"'shape': \(((?:[0-9]{1,19}, )*(?:[0-9]{1,19},?)?)\), \} *\n")
_CHUNK = 1 << 20


@contextlib.contextmanager
def open_archive(f, name: str):
    """An `Archive` over `f` (a path or a binary file object). A missing path or a directory raise
    ValueError, as ``torch.jit.load`` does; everything about the contents raises `Refused`."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if not os.path.exists(path):
            raise ValueError(f"ember.jit.load: The provided filename {path} does not exist")
        if os.path.isdir(path):
            raise ValueError(f"ember.jit.load: The provided filename {path} is a directory")
        with open(path, "rb") as fh:
            yield Archive(fh)
        return
    if not hasattr(f, "read"):
        raise TypeError(f"ember.jit.load: expected a path or a binary file object, got {type(f).__name__}")
    seekable = getattr(f, "seekable", None)
    yield Archive(f if seekable is not None and seekable() else io.BytesIO(f.read()))


class Archive:
    """The entries of one archive: `read_json`, then `read_array` per tensor."""

    def __init__(self, fh):
        self.fh = fh
        self.start = fh.tell()
        self.size = fh.seek(0, os.SEEK_END) - self.start
        self.entries: dict = {}     # name -> (data offset, size, crc), filled by `read_json`
        self._find_directory()

    def _read_at(self, offset: int, n: int) -> bytes:
        if offset < 0 or n < 0 or offset + n > self.size:
            raise Refused(f"a zip record at offset {offset} runs past the end of the file ({self.size} bytes)")
        self.fh.seek(self.start + offset)
        data = self.fh.read(n)
        if len(data) != n:
            raise Refused("the file changed size while being read")
        return data

    def _find_directory(self) -> None:
        if self.size < _EOCD.size:
            head = self._read_at(0, self.size) if self.size else b""
            raise Refused(("the file is empty" if not head else f"the file is too short ({self.size} bytes)")
                          + " to be an ember.jit archive" + describe_foreign(head, "ember.jit.load"))
        sig, disk, cd_disk, n_disk, count, cd_size, cd_offset, comment = _EOCD.unpack(
            self._read_at(self.size - _EOCD.size, _EOCD.size))
        if sig != b"PK\x05\x06" or comment:
            head = self._read_at(0, min(self.size, 8))
            raise Refused("not an ember.jit archive: the file does not end with a zip end record (it is truncated, "
                          "has bytes appended, or is not a zip archive)" + describe_foreign(head, "ember.jit.load"))
        end = self.size - _EOCD.size
        # a zip64 end record (its locator right before this one) is written when the counts or
        # offsets overflow, and by some writers (PyTorch's) always
        has_locator = end >= _ZIP64_LOCATOR.size and self._read_at(end - _ZIP64_LOCATOR.size, 4) == b"PK\x06\x07"
        if has_locator or 0xFFFF in (count, n_disk) or 0xFFFFFFFF in (cd_size, cd_offset):
            end, count, cd_size, cd_offset = self._zip64_directory(end)
        elif disk or cd_disk or n_disk != count:
            raise Refused("multi-disk zip archives are not supported")
        if cd_offset + cd_size != end:
            raise Refused("the zip central directory does not end where the end record starts")
        if count < 1 or cd_size < count * _CENTRAL.size:
            raise Refused(f"the zip central directory is too small for its {count} entries")
        self.count, self.cd_offset, self.cd_size = count, cd_offset, cd_size

    def _zip64_directory(self, end: int) -> tuple:
        if end < _ZIP64_LOCATOR.size:
            raise Refused("malformed zip64 end record")
        sig, _, record, _ = _ZIP64_LOCATOR.unpack(self._read_at(end - _ZIP64_LOCATOR.size, _ZIP64_LOCATOR.size))
        if sig != b"PK\x06\x07" or record + _ZIP64_EOCD.size != end - _ZIP64_LOCATOR.size:
            raise Refused("malformed zip64 end record locator")
        fields = _ZIP64_EOCD.unpack(self._read_at(record, _ZIP64_EOCD.size))
        sig, _, _, _, disk, cd_disk, n_disk, count, cd_size, cd_offset = fields
        if sig != b"PK\x06\x06" or disk or cd_disk or n_disk != count:
            raise Refused("malformed zip64 end record")
        return record, count, cd_size, cd_offset

    def _central_entries(self, directory: bytes):
        """Yield (name, local header offset, size, stored size, crc, flags, method, extra field) for
        each central directory entry (`_checked` refuses what this format does not allow)."""
        pos = 0
        for _ in range(self.count):
            if pos + _CENTRAL.size > len(directory):
                raise Refused("the zip central directory is truncated")
            (sig, _, _, flags, method, _, _, crc, csize, usize, n_name, n_extra, n_comment, _, _, _,
             offset) = _CENTRAL.unpack_from(directory, pos)
            pos += _CENTRAL.size
            name_bytes = directory[pos:pos + n_name]
            extra = directory[pos + n_name:pos + n_name + n_extra]
            pos += n_name + n_extra + n_comment
            if sig != b"PK\x01\x02" or pos > len(directory):
                raise Refused("malformed zip central directory entry")
            try:
                name = bytes(name_bytes).decode("utf-8")
            except UnicodeDecodeError:
                raise Refused(f"zip entry name {bytes(name_bytes)[:60]!r} is not UTF-8") from None
            yield name, offset, usize, csize, crc, flags, method, bytes(extra)
        if pos != len(directory):
            raise Refused("the zip central directory has bytes after its last entry")

    def read_json(self):
        """The parsed ``code/graphs.json``; also checks and records every entry of the archive."""
        directory = self._read_at(self.cd_offset, self.cd_size)
        graphs = [e for e in self._central_entries(directory) if e[0] == GRAPHS]
        if len(graphs) != 1:
            raise Refused(f"not an ember.jit archive: {'no' if not graphs else 'more than one'} {GRAPHS} entry "
                          f"(a torch.save or torch.jit.save file is not an ember.jit archive)")
        _, offset, size, crc, flags = _checked(*graphs[0])
        start = self._data_start(GRAPHS, offset)
        text = self._read_at(start, size)
        if zlib.crc32(text) != crc:
            raise Refused(f"CRC-32 mismatch in {GRAPHS}: the file is corrupted")
        try:
            payload = json.loads(text.decode("utf-8"), parse_constant=no_json_constant)
        except (UnicodeDecodeError, ValueError) as exc:
            raise Refused(f"{GRAPHS} is not valid JSON ({exc})") from None
        del text
        tensors = payload.get("tensors") if isinstance(payload, dict) else None
        if not isinstance(tensors, list):
            raise Refused(f"{GRAPHS} has no tensor table")
        if self.count != len(tensors) + 1:
            raise Refused(f"the archive has {self.count} entries, but its {GRAPHS} declares {len(tensors)} "
                          f"tensors (expected {len(tensors) + 1} entries)")
        self._layout(directory)
        return payload

    def _layout(self, directory: bytes) -> None:
        """Record every entry; refuse unexpected names, duplicates, overlaps, gaps and stray bytes."""
        regions = []
        for entry in self._central_entries(directory):
            name, offset, size, crc, flags = _checked(*entry)
            match = _DATA_NAME.fullmatch(name)
            if name != GRAPHS and (match is None or int(match.group(1)) >= self.count - 1):
                raise Refused(f"unexpected zip entry {name[:80]!r} (an ember.jit archive holds {GRAPHS} and "
                              f"data/<i>.npy for each of its tensors)")
            if name in self.entries:
                raise Refused(f"duplicate zip entry {name!r}")
            start = self._data_start(name, offset)
            self.entries[name] = (start, size, crc)
            regions.append((offset, start + size, flags, name))
        regions.sort()
        position, previous_flags = 0, 0
        for offset, end, flags, name in regions + [(self.cd_offset, None, 0, "the central directory")]:
            gap = offset - position
            # a data descriptor (flag bit 3: sizes written after the data) may follow an entry
            if gap and not (previous_flags & 0x8 and gap in (12, 16, 20, 24)):
                raise Refused(f"{name if end is None else repr(name)} starts at offset {offset}, expected "
                              f"{position} (entries overlap, or bytes are hidden before or between them)")
            position, previous_flags = end, flags

    def _data_start(self, name: str, offset: int) -> int:
        sig, _, flags, method, _, _, _, _, _, n_name, n_extra = _LOCAL.unpack(self._read_at(offset, _LOCAL.size))
        local_name = self._read_at(offset + _LOCAL.size, n_name)
        if sig != b"PK\x03\x04" or local_name != name.encode("utf-8") or method != 0:
            raise Refused(f"the local header of zip entry {name!r} does not match the central directory")
        start = offset + _LOCAL.size + n_name + n_extra
        if start > self.cd_offset:
            raise Refused(f"zip entry {name!r} lies outside the file's entries")
        return start

    def read_array(self, index: int, expected: np.dtype) -> np.ndarray:
        """Tensor `index`'s array; its ``.npy`` header must declare `expected` and a shape whose bytes
        are exactly the rest of the entry (checked before allocating)."""
        name = f"data/{index}.npy"
        start, size, crc = self.entries[name]
        if start + size > self.cd_offset:
            raise Refused(f"zip entry {name!r} runs into the central directory")
        head = self._read_at(start, min(size, _NPY_HEADER_MAX))
        shape, fortran, dtype, header = _npy_header(head, name)
        if dtype != expected:
            raise Refused(f"{name} holds dtype {dtype}, but the tensor table declares {expected}")
        numel, span = 1, dtype.itemsize
        for d in shape:
            numel, span = numel * d, span * max(d, 1)
        if span >= 1 << 62:
            raise Refused(f"{name} declares shape {list(shape)[:8]}, too large for any array")
        if header + numel * dtype.itemsize != size:
            raise Refused(f"{name} declares shape {list(shape)} of {dtype} ({numel * dtype.itemsize} bytes), but "
                          f"the entry holds {size - header} bytes after its header")
        arr = np.empty(shape, dtype, order="F" if fortran else "C")
        self.fh.seek(self.start + start + header)
        view = memoryview(arr.reshape(-1, order="A")).cast("B") if arr.size else memoryview(b"")
        _read_into(self.fh, view)
        if zlib.crc32(view, zlib.crc32(head[:header])) != crc:
            raise Refused(f"CRC-32 mismatch in {name}: the file is corrupted")
        return arr


def _checked(name, offset, usize, csize, crc, flags, method, extra) -> tuple:
    """(name, offset, size, crc, flags) of a central directory entry this format allows."""
    if flags & 0x1:
        raise Refused(f"zip entry {name[:80]!r} is encrypted")
    if method != 0:
        raise Refused(f"zip entry {name[:80]!r} is compressed (method {method}): ember.jit archives store "
                      f"entries uncompressed, so that no entry can expand beyond the file")
    usize, csize, offset = _zip64_sizes(extra, usize, csize, offset, name)
    if usize != csize:
        raise Refused(f"zip entry {name[:80]!r} declares {usize} bytes but stores {csize}")
    return name, offset, usize, crc, flags


def _zip64_sizes(extra: bytes, usize: int, csize: int, offset: int, name: str) -> tuple:
    """Sizes and offset with the zip64 extra field's 64-bit values where the 32-bit ones are 0xFFFFFFFF."""
    wanted = [v == 0xFFFFFFFF for v in (usize, csize, offset)]
    if not any(wanted):
        return usize, csize, offset
    pos = 0
    while pos + 4 <= len(extra):
        tag, n = struct.unpack_from("<HH", extra, pos)
        if tag == 0x0001:
            values = list(struct.unpack_from(f"<{n // 8}Q", extra, pos + 4)) if pos + 4 + n <= len(extra) else []
            out = []
            for value, want in zip((usize, csize, offset), wanted):
                if want:
                    if not values:
                        raise Refused(f"zip entry {name!r} has a truncated zip64 extra field")
                    value = values.pop(0)
                out.append(value)
            return tuple(out)
        pos += 4 + n
    raise Refused(f"zip entry {name!r} lacks its zip64 extra field")


def _read_into(fh, view: memoryview) -> None:
    pos, n = 0, len(view)
    readinto = getattr(fh, "readinto", None)
    while pos < n:
        if readinto is not None:
            got = readinto(view[pos:min(n, pos + _CHUNK)])
        else:
            piece = fh.read(min(n - pos, _CHUNK))
            got = len(piece)
            view[pos:pos + got] = piece
        if not got:
            raise Refused("the file ended inside a tensor")
        pos += got


def _npy_header(head: bytes, name: str) -> tuple:
    """(shape, fortran_order, dtype, header length) of a .npy entry starting with `head`. Only the
    header np.save writes for a plain array is accepted, read with a regular expression (NumPy's own
    reader evaluates the header as a Python literal and raises many kinds of errors on damage)."""
    if head[:8] != b"\x93NUMPY\x01\x00" or len(head) < 10:
        raise Refused(f"{name} is not a .npy array of format 1.0")
    length = 10 + struct.unpack_from("<H", head, 8)[0]
    match = _NPY_DICT.fullmatch(head[10:length].decode("latin1")) if length <= len(head) else None
    if match is None:
        raise Refused(f"{name} has a malformed .npy header")
    descr, fortran, dims = match.groups()
    try:
        dtype = np.dtype(descr)
    except TypeError:
        raise Refused(f"{name} has an unknown .npy dtype {descr!r}") from None
    shape = tuple(int(d) for d in dims.replace(",", " ").split())
    if len(shape) > _MAX_DIMS:
        raise Refused(f"{name} declares {len(shape)} dimensions")
    return shape, fortran == "True", dtype, length
