"""Minimal GGUF (v2/v3) reader for the pipeline's own checks.

Reads metadata and tensor infos, and tensor data for F32/F16; used to check
the exported model (round trip of every weight) and to read the gpt-2
conformance vocabulary in test_tokenizer.py. Not a general loader.
"""

import struct

import numpy as np

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class _Cursor:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = bytes(self.data[self.pos:self.pos + n]).decode("utf-8")
        self.pos += n
        return s

    def value(self, t):
        if t == _STRING:
            return self.string()
        if t == _ARRAY:
            et = self.take("<I")
            n = self.take("<Q")
            return [self.value(et) for _ in range(n)]
        return self.take(_SCALARS[t])


def read_gguf(path, load_tensors=True):
    """{"version", "metadata": {key: value}, "tensors": {name: (shape, type, array or None)}}."""
    with open(path, "rb") as f:
        data = f.read()
    c = _Cursor(data)
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    c.pos = 4
    version = c.take("<I")
    n_tensors = c.take("<Q")
    n_kv = c.take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = c.string()
        t = c.take("<I")
        meta[key] = c.value(t)
    infos = []
    for _ in range(n_tensors):
        name = c.string()
        n_dims = c.take("<I")
        shape = [c.take("<Q") for _ in range(n_dims)]
        ttype = c.take("<I")
        offset = c.take("<Q")
        infos.append((name, shape, ttype, offset))
    align = meta.get("general.alignment", 32)
    base = (c.pos + align - 1) // align * align
    tensors = {}
    for name, shape, ttype, offset in infos:
        arr = None
        if load_tensors and ttype in (0, 1):
            n = int(np.prod(shape))
            dt = np.float32 if ttype == 0 else np.float16
            arr = np.frombuffer(data, dtype=dt, count=n, offset=base + offset)
            arr = arr.reshape(list(reversed(shape)))  # ne[0] is the fastest-varying
        tensors[name] = (shape, ttype, arr)
    return {"version": version, "metadata": meta, "tensors": tensors}
