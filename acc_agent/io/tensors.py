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

import errno
import json
import os
import stat
import struct
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from acc_agent.errors import AccAgentError

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


def numpy_dtype(name: str) -> np.dtype[Any]:
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


def _raw_void(path: Path, dtype: np.dtype[Any]) -> AccAgentError:
    """Raw void bytes are ambiguous (fp8 e4m3 or e5m2, int4, ...): guessing would give wrong numbers."""
    return AccAgentError(
        "unsupported_dtype",
        f"{path.name} holds raw {dtype.itemsize}-byte values ({dtype.str}) with no numeric type: numpy.save "
        "drops the type of fp8/int4 (ml-dtypes) arrays, so the values cannot be decoded",
        hint="Save the tensor as float32 (what the comparison uses) or with torch.save, then re-dump.",
        path=str(path),
    )


def _is_raw_void(dtype: np.dtype[Any]) -> bool:
    """An unnamed void dtype that is not an ml-dtypes type: bytes whose meaning was lost."""
    return dtype.kind == "V" and not dtype.names and dtype.type is np.void


def read_npy(path: Path, *, mmap: bool = True) -> np.ndarray:
    """Read one ``.npy``; memory-mapped when possible so large tensors stream from disk."""
    require_regular(path)
    try:
        arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise missing_file(path) from None
    except ValueError as exc:
        text = str(exc)
        if "Python objects" in text or "Object arrays" in text:
            raise _pickle_refused(path, "object dtype array") from None
        if "pickled" in text or "allow_pickle" in text:
            raise _pickle_refused(path, "not a .npy array but a pickle stream") from None
        if mmap and "mmap" in text:
            raise _corrupt(path, "the data is shorter than its header says (truncated)") from None
        raise _corrupt(path, text) from None
    except (OSError, EOFError) as exc:
        raise _corrupt(path, str(exc) or type(exc).__name__) from None
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


class NpyStream:
    """A C-ordered ``.npy`` read in flat chunks into one reused buffer.

    Why not a memory map: every first touch of a mapped page is a page fault, and on a virtual
    machine those cost more system time than the metrics themselves (0.6 s of 1.6 s on a 226 MB
    pair); mapped pages also count in RSS until unmapped. ``read`` copies a chunk from the page
    cache into the same buffer each time, so memory stays at one chunk per side.
    Header problems (truncation, object dtype) are reported when the stream is opened.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            with open_regular(path) as fh:
                fmt = np.lib.format
                version = fmt.read_magic(fh)
                reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
                shape, fortran, dtype = reader(fh)
                self.offset = fh.tell()
        except FileNotFoundError:
            raise missing_file(path) from None
        except (ValueError, OSError, EOFError, SyntaxError) as exc:
            # Not a plain .npy header: let the full reader classify it (pickle, corrupt, ...).
            read_npy(path)
            raise _corrupt(path, str(exc)) from None
        if dtype.hasobject:
            raise _pickle_refused(path, "object dtype array")
        if _is_raw_void(dtype) and dtype.itemsize == 2:
            dtype = numpy_dtype("bfloat16")
        elif _is_raw_void(dtype):
            raise _raw_void(path, dtype)
        self.dtype: np.dtype[Any] = np.dtype(dtype)
        self.shape: tuple[int, ...] = tuple(int(s) for s in shape)
        self.fortran = bool(fortran)
        self.size = int(np.prod(self.shape)) if self.shape else 1
        if self.offset + self.size * self.dtype.itemsize > path.stat().st_size:
            raise _corrupt(path, "the data is shorter than its header says (truncated)")
        self._fh: Any = None
        self._buf: np.ndarray | None = None

    def read(self, start: int, count: int) -> np.ndarray:
        """Elements ``start:start+count`` of the flat (C-order) data; valid until the next call."""
        if self._fh is None:
            self._fh = open_regular(self.path)
        if self._buf is None or self._buf.size < count:
            self._buf = np.empty(count, dtype=self.dtype)
        out = self._buf[:count]
        self._fh.seek(self.offset + start * self.dtype.itemsize)
        got = self._fh.readinto(out.view(np.uint8).data)
        if got != count * self.dtype.itemsize:
            raise _corrupt(self.path, "file shrank while being read")
        return out

    def to_array(self) -> np.ndarray:
        """The whole tensor (for the few checks that need it at once)."""
        return read_npy(self.path)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._buf = None


def read_npz_key(path: Path, key: str) -> np.ndarray:
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


def safetensors_index(path: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    """Header of a ``.safetensors`` file: data offset and per-tensor dtype/shape/offsets."""
    try:
        with open_regular(path) as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise _corrupt(path, "file shorter than the 8-byte header length")
            (n,) = struct.unpack("<Q", head)
            if n > 100_000_000:
                raise _corrupt(path, "implausible header length")
            header = json.loads(fh.read(n).decode("utf-8"))
    except FileNotFoundError:
        raise missing_file(path) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _corrupt(path, f"header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _corrupt(path, "header is not a JSON object")
    header.pop("__metadata__", None)
    return 8 + n, header


def read_safetensors_key(path: Path, key: str) -> np.ndarray:
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
    shape = tuple(int(s) for s in info.get("shape", []))
    start, end = (int(x) for x in info.get("data_offsets", [0, 0]))
    count = int(np.prod(shape)) if shape else 1
    if end - start != count * dtype.itemsize or base + end > path.stat().st_size:
        raise _corrupt(path, f"tensor {key!r} extends past the end of the file (truncated)")
    if count == 0:
        return np.zeros(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=base + start, shape=shape)


def read_pt(path: Path) -> np.ndarray:
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
    return torch_to_numpy(obj.detach())


def torch_to_numpy(t: Any) -> np.ndarray:
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


def read_tensor(path: str | Path, key: str | None = None) -> np.ndarray:
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
        raise AccAgentError("unsafe_path", f"empty or invalid data file name {name!r}", path=str(base))
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
        raise AccAgentError("unsafe_path", f"cannot resolve {name!r}: {exc}", path=str(base)) from None
    if not resolved.is_relative_to(base.resolve()):
        raise AccAgentError(
            "unsafe_path",
            f"data_name {name!r} resolves (through a link) outside {base}",
            hint="Replace the symbolic link by the real file.",
            path=str(full),
        )
    return full
