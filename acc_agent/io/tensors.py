"""Safe tensor readers: one tensor file (or one key of a container) in, one numpy array out.

Dumps come from other people's machines, so nothing here unpickles: ``.npy``/``.npz`` are read
with ``allow_pickle=False``, ``.pt`` only through ``torch.load(weights_only=True)``, and
``.safetensors`` is parsed from its documented header without any third-party loader. ``.npy``
files are memory-mapped so that a large tensor is streamed by the metrics, not copied whole.
Every failure becomes an :class:`AccAgentError` that names the file and says what to do.
Only regular files are opened: a FIFO or device named by a dump would block the reader forever
(a FIFO open waits for a writer), so every reader checks the file type first.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import stat
import struct
import tokenize
import zipfile
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TypeGuard

import numpy as np

from acc_agent.errors import AccAgentError
from acc_agent.io.arrays import Array, DType

if TYPE_CHECKING:
    import torch

#: Smaller .npy files are read whole: mapping them costs more system calls than it saves.
MMAP_MIN_BYTES = 1 << 20

TENSOR_SUFFIXES = (".npy", ".npz", ".pt", ".pth", ".bin", ".safetensors")

# safetensors dtype codes -> numpy dtype names (bf16/fp8 resolved through ml_dtypes).
_SAFETENSORS_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U16": "uint16",
    "U8": "uint8",
    "BOOL": "bool",
}


def numpy_dtype(name: str) -> DType:
    """A numpy dtype for ``name``, including bf16/fp8 via ml-dtypes (msprobe reads those as fp32)."""
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def _corrupt(path: Path, why: str) -> AccAgentError:
    return AccAgentError(
        "corrupt_tensor",
        f"cannot read tensor file {path.name}: {why}",
        hint="The file is truncated or not a tensor file; re-dump it or remove it from the dump.",
        path=str(path),
    )


def _pickle_refused(path: Path, why: str) -> AccAgentError:
    return AccAgentError(
        "unsafe_pickle",
        f"{path.name} needs unpickling arbitrary Python objects ({why}); refused for safety",
        hint="Re-save the tensor as plain numeric data (numpy.save of a numeric array, or "
        "torch.save of a tensor / dict of tensors), never an object array or custom class.",
        path=str(path),
    )


def _not_npy_or_pickle(path: Path) -> AccAgentError:
    """numpy calls every file without the .npy magic "pickled": name what the file really starts with.

    A pickle stream starts with its protocol byte (0x80); anything else (a text file, an HTML error
    page saved as .npy) is simply not a .npy file, and saying "pickle" would send the user the wrong way.
    """
    with contextlib.suppress(OSError), open(path, "rb") as fh:
        head = fh.read(16)
        if not head.startswith(b"\x80"):
            shown = head.decode("ascii", "replace") if head.isascii() else head.hex(" ")
            return AccAgentError("not_a_tensor_file", f"not a .npy file: {path.name} starts with {shown!r}",
                                 hint="Pass the tensor file itself (numpy.save writes a header starting with "
                                      "\\x93NUMPY); re-save or re-dump it.", path=str(path))
    return _pickle_refused(path, "not a .npy array but a pickle stream")


def _not_regular(path: Path, mode: int) -> AccAgentError:
    """Name the file type: "named pipe" tells the user why the file was skipped, not just that it was."""
    kind = ("named pipe (FIFO)" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode)
            else "character device" if stat.S_ISCHR(mode) else "block device" if stat.S_ISBLK(mode)
            else "directory" if stat.S_ISDIR(mode) else "special file")
    return AccAgentError(
        "not_a_regular_file",
        f"tensor file {path.name} is a {kind}, not a regular file; not read (it could block forever)",
        hint="Replace it by the real tensor file (copy the dump with its data, not a pipe or device).",
        path=str(path),
    )


def _stat_error(path: Path, exc: OSError) -> AccAgentError:
    """A structured error for a file that cannot even be looked up (missing, link loop, long name)."""
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return missing_file(path)
    if exc.errno == errno.ELOOP:
        return AccAgentError(
            "symlink_loop",
            f"tensor file {path.name} is a symbolic link that loops back on itself",
            hint="Replace the link by the real tensor file.",
            path=str(path),
        )
    if exc.errno == errno.ENAMETOOLONG:
        return _name_too_long(path)
    return _corrupt(path, exc.strerror or str(exc))


def _name_too_long(path: Path) -> AccAgentError:
    """The lookup fails before any file is touched; the name is cut so the message stays readable."""
    return AccAgentError(
        "name_too_long",
        f"tensor file name {path.name[:80]}... ({len(os.fsencode(path.name))} bytes) is longer than the "
        "file system allows, so the file cannot exist here",
        hint="Shorten the file name and its data_name in dump.json (or re-dump with shorter module names).",
        path=str(path),
    )


def require_regular(path: Path) -> int:
    """Size of ``path`` if it is a regular file (after links); else a structured error.

    Why before every open: opening a FIFO blocks until a writer appears, and reading a device
    never ends, so a hostile or damaged dump must be refused by file type, not by timeout.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _stat_error(path, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    return st.st_size


def path_exists(path: Path) -> bool:
    """``path.exists()`` that reports a link loop or an over-long name instead of raising OSError.

    Why: ``Path.exists`` raises ``OSError`` for a name longer than the file system allows and
    quietly says False for a link loop; a user passing either deserves the real reason.
    """
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return False
        raise _stat_error(path, exc) from None
    except ValueError:  # an embedded NUL byte: no such file can exist
        return False
    return True


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading only if it is a regular file, without ever blocking.

    ``O_NONBLOCK`` makes the open of a FIFO return at once (instead of waiting for a writer), and
    the type is checked on the open descriptor, so a file swapped after a :func:`require_regular`
    check is still caught. The flag has no effect on reads of regular files.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _stat_error(path, exc) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _raw_void(path: Path, dtype: DType) -> AccAgentError:
    """Raw void bytes are ambiguous (fp8 e4m3 or e5m2, int4, ...): guessing would give wrong numbers."""
    return AccAgentError(
        "unsupported_dtype",
        f"{path.name} holds raw {dtype.itemsize}-byte values ({dtype.str}) with no numeric type: numpy.save "
        "drops the type of fp8/int4 (ml-dtypes) arrays, so the values cannot be decoded",
        hint="Save the tensor as float32 (what the comparison uses) or with torch.save, then re-dump.",
        path=str(path),
    )


def _is_raw_void(dtype: DType) -> bool:
    """An unnamed void dtype that is not an ml-dtypes type: bytes whose meaning was lost."""
    return dtype.kind == "V" and not dtype.names and dtype.type is np.void


def _check_claim(path: Path, shape: tuple[int, ...], itemsize: int, available: int, what: str = "file") -> None:
    """Refuse a header whose shape is negative or needs more bytes than ``available`` holds.

    Why before any read: numpy allocates the array a header claims before reading its data, so a
    200-byte file claiming 10^10 float64 would allocate 75 GiB (or raise MemoryError) first.
    """
    if any(int(d) < 0 for d in shape):
        raise _corrupt(path, f"the header claims a negative dimension {tuple(shape)}")
    needed = math.prod(int(d) for d in shape) * itemsize
    if needed > available:
        raise _corrupt(path, f"the data is shorter than its header says (truncated): shape {tuple(shape)} needs "
                             f"{needed:,} bytes, the {what} holds {max(available, 0):,}")


def _check_npy_claim(path: Path, size: int) -> None:
    """:func:`_check_claim` for a ``.npy`` file, and its header read within bounds.

    A file without the .npy magic is left to ``np.load`` to classify (a pickle, a text file); one
    with the magic whose header cannot be read is refused here, since ``np.load`` would first
    allocate the header length the file claims.
    """
    with open_regular(path) as fh:
        if fh.read(6) != b"\x93NUMPY":
            return
        fh.seek(0)
        try:
            shape, _, dtype, offset = _npy_header(fh)
        except (ValueError, OSError, EOFError) as exc:
            raise _corrupt(path, str(exc) or type(exc).__name__) from None
    if not dtype.hasobject:  # an object array is refused by np.load, with its own words
        _check_claim(path, shape, dtype.itemsize, size - offset)


def read_npy(path: Path, *, mmap: bool = True) -> Array:
    """Read one ``.npy``; memory-mapped when possible so large tensors stream from disk."""
    _check_npy_claim(path, require_regular(path))
    try:
        arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise missing_file(path) from None
    except ValueError as exc:
        text = str(exc)
        if "Python objects" in text or "Object arrays" in text:
            raise _pickle_refused(path, "object dtype array") from None
        if "pickled" in text or "allow_pickle" in text:
            raise _not_npy_or_pickle(path) from None
        if mmap and "mmap" in text:
            raise _corrupt(path, "the data is shorter than its header says (truncated)") from None
        raise _corrupt(path, text) from None
    except (OSError, EOFError) as exc:
        raise _corrupt(path, str(exc) or type(exc).__name__) from None
    except (SyntaxError, TypeError, tokenize.TokenError) as exc:  # numpy's header parser on a damaged header
        raise _corrupt(path, f"the header is not a valid .npy header ({type(exc).__name__})") from None
    if not isinstance(arr, np.ndarray):
        raise _corrupt(path, "not a single array")
    if arr.dtype.hasobject:
        raise _pickle_refused(path, "object dtype array")
    if _is_raw_void(arr.dtype) and arr.dtype.itemsize == 2:
        # ml_dtypes bf16 saved by numpy shows up as raw 2-byte void: read it back as bf16.
        arr = arr.view(numpy_dtype("bfloat16"))
    elif _is_raw_void(arr.dtype):
        raise _raw_void(path, arr.dtype)
    return arr


#: The header numpy writes for a plain array (keys sorted, shape a tuple), parsed without
#: ``ast.literal_eval`` (≈100 µs a file, a tenth of a second on a 1,000-tensor dump).
_NPY_HEADER = re.compile(r"\{'descr': '([<>|=][a-zA-Z]\d*)', 'fortran_order': (True|False), "
                         r"'shape': \(((?:\d+, ?)*\d*)\), \}\s*")
#: Bytes the kernel is asked to read ahead of the chunk being read (``POSIX_FADV_WILLNEED``), so a
#: tensor on disk arrives while the previous chunks are computed.
STREAM_PREFETCH_BYTES = 8 << 20


#: Longest .npy header accepted (numpy itself refuses headers over 10,000 bytes unless told otherwise).
NPY_MAX_HEADER_BYTES = 100_000


def _npy_prefix_check(head: bytes) -> None:
    """Refuse a .npy format version numpy does not write (its parser would guess a header layout).

    Why before numpy's parser: given version 0.0 it reads a 4-byte header length and then that many
    bytes in one ``read(n)`` — "v\\x00{'" claims 660 MB — allocating them before finding the file is
    200 bytes long. (The 4-byte length of a real 2.0/3.0 header is bounded by the caller.)
    """
    major, minor = head[6], head[7]
    if major not in (1, 2, 3) or minor != 0:
        raise ValueError(f"unsupported .npy format version {major}.{minor} (numpy writes 1.0, 2.0 or 3.0)")


def _npy_header(fh: BinaryIO) -> tuple[tuple[int, ...], bool, DType, int]:
    """(shape, fortran, dtype, data offset) of an open ``.npy``; numpy's own parser for unusual headers."""
    fmt = np.lib.format
    head = fh.read(10)
    if len(head) == 10 and head[:6] == b"\x93NUMPY":
        _npy_prefix_check(head)
    if len(head) == 10 and head[:6] == b"\x93NUMPY" and head[6] in (1, 2, 3):
        if head[6] == 1:
            size, start = int.from_bytes(head[8:10], "little"), 10
        else:
            more = fh.read(2)
            size, start = int.from_bytes(head[8:10] + more, "little"), 12
            if size > NPY_MAX_HEADER_BYTES:  # see _npy_prefix_check: numpy would read(size) first
                raise ValueError(f"the header claims {size:,} bytes; a .npy header is a few hundred")
        if size <= NPY_MAX_HEADER_BYTES:
            text = fh.read(size)
            m = _NPY_HEADER.fullmatch(text.decode("latin1")) if len(text) == size else None
            if m is not None:
                shape = tuple(int(x) for x in m.group(3).replace(" ", "").split(",") if x)
                try:
                    return shape, m.group(2) == "True", np.dtype(m.group(1)), start + size
                except TypeError:  # a descr numpy does not know ('<f1'): numpy's parser words it below
                    pass
    fh.seek(0)
    try:
        version = fmt.read_magic(fh)
        reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = reader(fh)
    except (SyntaxError, TypeError, tokenize.TokenError) as exc:
        # numpy tokenizes and literal_evals the header text: a damaged one raises these, not ValueError
        raise ValueError(f"the header is not a valid .npy header ({type(exc).__name__}: {exc})") from None
    return shape, fortran, dtype, fh.tell()


class NpyStream:
    """A C-ordered ``.npy`` read in flat chunks, each file byte read once.

    Each chunk is copied from the page cache into one reused, cache-sized buffer by a single
    ``pread``. Why not a memory map: measured on the 2-core VM, first-touch page faults of mapped
    pages cost as much as the copy (0.21 against 0.17 ns a byte, with the compute's first read),
    mapped pages count in RSS, and a mapped page past the end of a file that shrinks meanwhile
    kills the process (SIGBUS) where a short read is an error the row can report. The file is
    opened once and read ahead (``POSIX_FADV_SEQUENTIAL``, and ``POSIX_FADV_WILLNEED`` for the
    next ``STREAM_PREFETCH_BYTES``), so a tensor still on disk is read by the kernel while the
    previous chunks are computed: I/O overlaps compute without a thread.
    Header problems (truncation, object dtype) are reported when the stream is opened; a file
    that shrinks afterwards is reported by the read that comes up short.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            with open_regular(path) as fh:
                shape, fortran, dtype, self.offset = _npy_header(fh)
                file_size = os.fstat(fh.fileno()).st_size
                fd = os.dup(fh.fileno())  # kept for the reads: opening once saves ~0.1 ms a tensor
        except FileNotFoundError:
            raise missing_file(path) from None
        except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:  # TypeError: np.dtype("<f1")
            # Not a plain .npy header: let the full reader classify it (pickle, corrupt, ...).
            read_npy(path)
            raise _corrupt(path, str(exc)) from None
        self._fd: int | None = fd
        try:
            self._validate(path, shape, fortran, dtype, file_size)
        except BaseException:
            self.close()
            raise
        self._buf: Array | None = None
        self._prefetched = 0  # file offset up to which read-ahead was asked for
        if self.size * self.dtype.itemsize > STREAM_PREFETCH_BYTES:
            _advise(fd, 0, 0, "SEQUENTIAL")  # a bigger read-ahead window for the long ones

    def _validate(self, path: Path, shape: tuple[int, ...], fortran: bool, dtype: DType,
                  file_size: int) -> None:
        if dtype.hasobject:
            raise _pickle_refused(path, "object dtype array")
        if _is_raw_void(dtype) and dtype.itemsize == 2:
            dtype = numpy_dtype("bfloat16")
        elif _is_raw_void(dtype):
            raise _raw_void(path, dtype)
        self.dtype: DType = np.dtype(dtype)
        self.shape: tuple[int, ...] = tuple(int(s) for s in shape)
        self.fortran = bool(fortran)
        _check_claim(path, self.shape, self.dtype.itemsize, file_size - self.offset)
        self.size = math.prod(self.shape)  # exact: np.prod wraps around on a huge claimed shape

    def read(self, start: int, count: int) -> Array:
        """Elements ``start:start+count`` of the flat (C-order) data; valid until the next call."""
        if self._fd is None:  # read again after close()
            with open_regular(self.path) as fh:
                self._fd = os.dup(fh.fileno())
        item = self.dtype.itemsize
        lo = self.offset + start * item
        nbytes = count * item
        data_end = self.offset + self.size * item
        if lo + nbytes > self._prefetched and lo + nbytes < data_end:  # more reads follow this one
            end = min(data_end, lo + nbytes + STREAM_PREFETCH_BYTES)
            _advise(self._fd, lo, end - lo, "WILLNEED")
            # ask again half-way through; never again once the end of the data was asked for (each
            # call walks its whole range in the page cache: re-asking for the rest of a 4 MB tensor
            # on every chunk walked it 8 times over)
            self._prefetched = data_end if end == data_end else end - STREAM_PREFETCH_BYTES // 2
        if self._buf is None or self._buf.size < count:
            self._buf = np.empty(count, dtype=self.dtype)
        out = self._buf[:count]
        got = os.preadv(self._fd, [out.view(np.uint8).data], lo) if count else 0
        if got != nbytes:
            raise _corrupt(self.path, "file shrank while being read")
        return out

    def to_array(self) -> Array:
        """The whole tensor (for the few checks that need it at once)."""
        return read_npy(self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._buf = None

    def __del__(self) -> None:  # a stream dropped without close() must not leak its descriptor
        with contextlib.suppress(Exception):
            self.close()


def _advise(fd: int, offset: int, length: int, what: str) -> None:
    """``posix_fadvise`` where the platform has it (a hint: never an error)."""
    advice = getattr(os, f"POSIX_FADV_{what}", None)
    if advice is not None:
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, offset, length, advice)


def read_npz_key(path: Path, key: str) -> Array:
    """One array of an ``.npz`` (loaded whole: numpy cannot memory-map compressed members)."""
    require_regular(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            if key not in npz.files:
                raise AccAgentError(
                    "missing_key",
                    f"{path.name} has no array named {key!r}",
                    hint="Arrays in the file: " + ", ".join(npz.files[:20]),
                    path=str(path),
                )
            _check_npz_member(path, npz.zip, key)
            return np.asarray(npz[key])
    except AccAgentError:
        raise
    except FileNotFoundError:
        raise missing_file(path) from None
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise _pickle_refused(path, f"object array {key!r}") from None
        raise _corrupt(path, str(exc)) from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise _corrupt(path, str(exc) or type(exc).__name__) from None
    except (SyntaxError, TypeError, tokenize.TokenError, zlib.error, NotImplementedError, RuntimeError) as exc:
        # a damaged member: numpy's header parser (SyntaxError, TokenError), a broken deflate stream
        # (zlib.error), an unknown compression method (NotImplementedError), an encrypted member (RuntimeError)
        raise _corrupt(path, f"member {key!r} is damaged ({type(exc).__name__}: {exc})") from None


def _check_npz_member(path: Path, archive: zipfile.ZipFile, key: str) -> None:
    """:func:`_check_claim` for one ``.npz`` member against its uncompressed size in the zip directory.

    numpy reads a member that is not a real file by allocating the whole claimed array first,
    so a 300-byte member claiming 10^10 elements must be refused here, before ``npz[key]``.
    """
    name = key if key in archive.namelist() else f"{key}.npy"
    try:
        info = archive.getinfo(name)
    except KeyError:  # numpy's read of the member words it
        return
    _check_npz_ratio(path, name, info)
    try:
        with archive.open(info) as member:
            shape, _, dtype, offset = _npy_header(member)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - only a pre-check: numpy's read of the member words any problem
        return
    if not dtype.hasobject:
        _check_claim(path, shape, dtype.itemsize, info.file_size - offset, what=f"member {name}")


#: A compressed ``.npz`` member may expand to at most this many times its stored size...
NPZ_MAX_RATIO = 200
#: ...once it is bigger than this (small members compress as they like: a zeroed bias is not a bomb).
NPZ_RATIO_FREE_BYTES = 64 << 20


def _check_npz_ratio(path: Path, name: str, info: zipfile.ZipInfo) -> None:
    """Refuse a member that would decompress to far more than it stores (a zip bomb), before reading it.

    Why: a bomb whose zip directory tells the truth passes every size check (its claimed size is
    its real one), and numpy would allocate and inflate all of it: 1 MB of deflate can hold 1 GB
    of zeros. Real tensor data compresses a few times at most; an all-zero tensor of more than
    NPZ_RATIO_FREE_BYTES stored compressed is refused too, with the way to keep it readable.
    """
    if info.compress_type == zipfile.ZIP_STORED or info.file_size <= NPZ_RATIO_FREE_BYTES:
        return
    ratio = info.file_size / max(info.compress_size, 1)
    if ratio > NPZ_MAX_RATIO:
        raise AccAgentError(
            "compression_bomb",
            f"{path.name}: member {name} would expand {ratio:,.0f}x ({info.compress_size:,} bytes stored, "
            f"{info.file_size:,} uncompressed); refused as a likely zip bomb (limit {NPZ_MAX_RATIO}x "
            f"above {NPZ_RATIO_FREE_BYTES >> 20} MiB)",
            hint="If the tensor is genuine, save it uncompressed (numpy.save to a .npy, or numpy.savez "
                 "instead of savez_compressed) and compare that file.",
            path=str(path),
        )


def npz_keys(path: Path) -> list[str]:
    """Array names of an ``.npz`` in file order, without loading any data."""
    require_regular(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            return list(npz.files)
    except FileNotFoundError:
        raise missing_file(path) from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise _corrupt(path, str(exc) or type(exc).__name__) from None


def safetensors_index(path: Path) -> tuple[int, dict[str, object]]:
    """Header of a ``.safetensors`` file: data offset and per-tensor dtype/shape/offsets."""
    try:
        with open_regular(path) as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise _corrupt(path, "file shorter than the 8-byte header length")
            (n,) = struct.unpack("<Q", head)
            if n > 100_000_000:
                raise _corrupt(path, "implausible header length")
            if 8 + n > os.fstat(fh.fileno()).st_size:
                raise _corrupt(path, f"the header length ({n:,} bytes) runs past the end of the file (truncated)")
            header = json.loads(fh.read(n).decode("utf-8"))
    except FileNotFoundError:
        raise missing_file(path) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _corrupt(path, f"header is not JSON ({exc})") from None
    except RecursionError:  # json recurses once per nesting level: a hostile header nests thousands deep
        raise _corrupt(path, "header is JSON nested too deeply to be a tensor index") from None
    if not isinstance(header, dict):
        raise _corrupt(path, "header is not a JSON object")
    header.pop("__metadata__", None)
    return 8 + n, header


def _plain_int(x: object) -> TypeGuard[int]:
    """An integer as JSON writes one (not a bool, which Python counts as an int)."""
    return isinstance(x, int) and not isinstance(x, bool)


def safetensors_shape(info: object) -> list[int] | None:
    """The ``shape`` of one safetensors index entry, or None when it is not a list of non-negative ints.

    Why strict: the index comes from the file, and ``int()`` of whatever it holds would turn
    ``1.5`` into 1 or raise on ``"x"`` instead of saying the file is damaged.
    """
    shape = info.get("shape", []) if isinstance(info, dict) else None
    if not isinstance(shape, list) or not all(_plain_int(d) and d >= 0 for d in shape):
        return None
    return list(shape)


def read_safetensors_key(path: Path, key: str) -> Array:
    """One tensor of a ``.safetensors`` file, memory-mapped."""
    base, header = safetensors_index(path)
    info = header.get(key)
    if not isinstance(info, dict):
        raise AccAgentError(
            "missing_key",
            f"{path.name} has no tensor named {key!r}",
            hint="Tensors in the file: " + ", ".join(list(header)[:20]),
            path=str(path),
        )
    code = str(info.get("dtype"))
    if code not in _SAFETENSORS_DTYPES:
        raise _corrupt(path, f"unsupported dtype {code} for {key!r}")
    dtype = numpy_dtype(_SAFETENSORS_DTYPES[code])
    dims = safetensors_shape(info)
    offsets = info.get("data_offsets", [0, 0])
    if dims is None:
        raise _corrupt(path, f"tensor {key!r} has no valid shape (a list of non-negative integers): {info.get('shape')!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_plain_int(x) and x >= 0 for x in offsets)
            and offsets[0] <= offsets[1]):
        raise _corrupt(path, f"tensor {key!r} has invalid data_offsets {offsets!r} (two growing non-negative integers)")
    shape = tuple(dims)
    start, end = offsets
    count = math.prod(shape)
    if end - start != count * dtype.itemsize or base + end > path.stat().st_size:
        raise _corrupt(path, f"tensor {key!r} extends past the end of the file (truncated)")
    if count == 0:
        return np.zeros(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=base + start, shape=shape)


def read_pt(path: Path) -> Array:
    """A ``.pt`` tensor through ``torch.load(weights_only=True)`` only; bf16/fp8 kept via ml-dtypes."""
    try:
        import torch
    except ImportError:
        raise AccAgentError(
            "missing_dependency",
            f"reading {path.name} needs PyTorch, which is not installed",
            hint="pip install 'acc-agent[torch]'  (or convert the dump to .npy)",
            path=str(path),
        ) from None
    require_regular(path)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types; all mean "cannot be read safely"
        text = str(exc)
        if "weights_only" in text or "Unpickl" in type(exc).__name__ or "GLOBAL" in text:
            raise _pickle_refused(path, "its pickle references code outside plain tensors") from None
        raise _corrupt(path, text.splitlines()[0] if text else type(exc).__name__) from None
    if not isinstance(obj, torch.Tensor):
        raise _corrupt(path, f"holds a {type(obj).__name__}, not a single tensor")
    if obj.layout != torch.strided or obj.is_quantized:
        kind = "quantized" if obj.is_quantized else str(obj.layout).replace("torch.", "")
        raise AccAgentError(
            "unsupported_dtype",
            f"{path.name} holds a {kind} tensor ({obj.dtype}), which has no plain numeric array",
            hint="Save t.dequantize() or t.to_dense() (as float32), then re-dump.",
            path=str(path),
        )
    try:
        return torch_to_numpy(obj.detach())
    except (TypeError, RuntimeError) as exc:  # a dtype numpy has no counterpart for
        raise AccAgentError(
            "unsupported_dtype",
            f"{path.name} holds a {obj.dtype} tensor that cannot become a numpy array ({exc})",
            hint="Save the tensor as float32 (what the comparison uses), then re-dump.",
            path=str(path),
        ) from None


def torch_to_numpy(t: torch.Tensor) -> Array:
    """Tensor -> numpy, keeping bf16/fp8 bit-exact through ml-dtypes views."""
    import torch

    special = {
        torch.bfloat16: ("int16", "bfloat16"),
        getattr(torch, "float8_e4m3fn", None): ("uint8", "float8_e4m3fn"),
        getattr(torch, "float8_e5m2", None): ("uint8", "float8_e5m2"),
    }
    if t.dtype in special:
        raw, name = special[t.dtype]
        view_dtype = torch.int16 if raw == "int16" else torch.uint8
        return t.contiguous().view(view_dtype).numpy().view(numpy_dtype(name))
    return np.asarray(t.contiguous().numpy())


def missing_file(path: Path) -> AccAgentError:
    return AccAgentError(
        "missing_file",
        f"tensor file {path.name} is listed but does not exist",
        hint="Copy the complete dump directory (including dump_tensor_data/), or re-dump.",
        path=str(path),
    )


def read_tensor(path: str | Path, key: str | None = None) -> Array:
    """Read one tensor by file suffix; ``key`` picks an array of an ``.npz``/``.safetensors``."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".npy":
        return read_npy(p, mmap=require_regular(p) >= MMAP_MIN_BYTES)
    if suffix == ".npz":
        if key is None:
            keys = npz_keys(p)
            if len(keys) != 1:
                raise AccAgentError(
                    "ambiguous_container",
                    f"{p.name} holds {len(keys)} arrays; say which one",
                    hint="Pass FILE.npz:KEY, or compare the two .npz files as dumps.",
                    path=str(p),
                )
            key = keys[0]
        return read_npz_key(p, key)
    if suffix == ".safetensors":
        if key is None:
            _, header = safetensors_index(p)
            if len(header) != 1:
                raise AccAgentError(
                    "ambiguous_container",
                    f"{p.name} holds {len(header)} tensors; say which one",
                    hint="Pass FILE.safetensors:KEY.",
                    path=str(p),
                )
            key = next(iter(header))
        return read_safetensors_key(p, key)
    if suffix in (".pt", ".pth", ".bin"):
        return read_pt(p)
    raise AccAgentError(
        "unsupported_format",
        f"{p.name}: unknown tensor file type {suffix or '(none)'}",
        hint="Supported: .npy, .npz, .safetensors, .pt (with PyTorch installed).",
        path=str(p),
    )


def safe_join(base: Path, name: str) -> Path:
    """``base/name`` only if it stays inside ``base``: dump files must not reach elsewhere."""
    if not name or "\x00" in name:
        raise AccAgentError("unsafe_path", f"empty or invalid data file name {name!r}", path=str(base),
                            hint="Fix the data_name in dump.json (a file name inside dump_tensor_data/), or re-dump.")
    rel = Path(name)
    if rel.is_absolute() or name.startswith(("/", "\\")) or ".." in rel.parts or ".." in name.split("\\"):
        raise AccAgentError(
            "unsafe_path",
            f"data_name {name!r} points outside the dump directory {base}",
            hint="A dump may only reference files inside its own dump_tensor_data/ folder; "
            "fix or regenerate dump.json.",
            path=str(base),
        )
    full = base / rel
    try:
        link = full.is_symlink()
    except OSError as exc:  # a name longer than the file system allows (ENAMETOOLONG), ...
        raise _stat_error(full, exc) from None
    if len(rel.parts) == 1 and not link:
        return full  # a plain file directly in base: nothing to resolve (the common, fast case)
    try:
        resolved = full.resolve()
    except RuntimeError:  # Python < 3.13 reports a link loop as RuntimeError, not OSError
        raise _stat_error(full, OSError(errno.ELOOP, "symbolic link loop")) from None
    except OSError as exc:
        raise AccAgentError("unsafe_path", f"cannot resolve {name!r}: {exc}", path=str(base),
                            hint="Replace the link by the real tensor file, or fix the data_name in dump.json.") from None
    if not resolved.is_relative_to(base.resolve()):
        raise AccAgentError(
            "unsafe_path",
            f"data_name {name!r} resolves (through a link) outside {base}",
            hint="Replace the symbolic link by the real file.",
            path=str(full),
        )
    return full
