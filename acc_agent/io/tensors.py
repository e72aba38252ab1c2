"""Safe tensor readers: one tensor file (or one key of a container) in, one numpy array out.

Dumps come from other people's machines, so nothing here unpickles: ``.npy``/``.npz`` are read
with ``allow_pickle=False``, ``.pt`` only through ``torch.load(weights_only=True)``, and
``.safetensors`` is parsed from its documented header without any third-party loader. ``.npy``
files are memory-mapped so that a large tensor is streamed by the metrics, not copied whole.
Every failure becomes an :class:`AccAgentError` that names the file and says what to do.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path
from typing import Any

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


def read_npy(path: Path, *, mmap: bool = True) -> np.ndarray:
    """Read one ``.npy``; memory-mapped when possible so large tensors stream from disk."""
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
    if arr.dtype.kind == "V" and arr.dtype.itemsize == 2 and not arr.dtype.names:
        # ml_dtypes bf16 saved by numpy shows up as raw 2-byte void: read it back as bf16.
        arr = arr.view(numpy_dtype("bfloat16"))
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
            with path.open("rb") as fh:
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
        if dtype.kind == "V" and dtype.itemsize == 2 and not dtype.names:
            dtype = numpy_dtype("bfloat16")
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
            self._fh = self.path.open("rb")
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
        with path.open("rb") as fh:
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
    if not path.is_file():
        raise missing_file(path)
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
        try:
            small = p.stat().st_size < MMAP_MIN_BYTES
        except OSError:
            small = False
        return read_npy(p, mmap=not small)
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
    if len(rel.parts) == 1 and not full.is_symlink():
        return full  # a plain file directly in base: nothing to resolve (the common, fast case)
    try:
        resolved = full.resolve()
        if not resolved.is_relative_to(base.resolve()):
            raise AccAgentError(
                "unsafe_path",
                f"data_name {name!r} resolves (through a link) outside {base}",
                hint="Replace the symbolic link by the real file.",
                path=str(full),
            )
    except OSError as exc:
        raise AccAgentError("unsafe_path", f"cannot resolve {name!r}: {exc}", path=str(base)) from None
    return full
