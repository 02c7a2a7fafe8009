#!/usr/bin/python3
"""Writes heed's golden fixtures: inputs, parameters and PyTorch's outputs, as safetensors.

Run with Debian's interpreter after `apt-get install python3-torch python3-numpy`
(PyTorch 1.13; the `python3` earlier on PATH may be another interpreter without torch):

    /usr/bin/python3 tests/golden/generate.py            # all fixtures
    /usr/bin/python3 tests/golden/generate.py softmax    # only the named ones

The fixtures are committed; the tests read them and never need PyTorch. Every fixture is
seeded, so a rerun with the same PyTorch rewrites the same bytes.
Debian has no Python safetensors package, so the format (u64 little-endian header length,
JSON header, raw little-endian data) is written here by hand.
"""
import json
import math
import pathlib
import struct
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = {}

_DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
}


def _raw_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def save(name, tensors, metadata=None):
    """Writes tests/golden/<name>.safetensors (names sorted, data aligned as the reference does)."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for key in sorted(tensors):
        t = tensors[key]
        data = _raw_bytes(t)
        header[key] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape),
                       "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - (8 + len(text)) % 8) % 8)
    path = HERE / f"{name}.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text.encode() + b"".join(blobs))
    print(f"wrote {path.relative_to(HERE.parent.parent)} ({path.stat().st_size} bytes)")


def fixture(fn):
    FIXTURES[fn.__name__] = fn
    return fn


@fixture
def softmax():
    """torch.softmax on rows with large values, -inf entries, and one row of only -inf."""
    torch.manual_seed(0)
    x = torch.randn(6, 37, dtype=torch.float64) * 3
    x[1] += 1000.0                      # large offset: naive exp would overflow
    x[2, ::3] = 1e4                     # several huge ties
    x[3, 5:20] = -math.inf              # masked entries
    x[4, :] = -math.inf                 # fully masked: NaN in PyTorch 1.13
    x[4, 0] = -math.inf
    x[5] *= 40                          # sharp distribution
    wide = torch.randn(3, 1000, dtype=torch.float64) * 10
    save("softmax", {
        "x_f64": x, "y_f64": torch.softmax(x, dim=-1),
        "x_f32": x.float(), "y_f32": torch.softmax(x.float(), dim=-1),
        "wide_x": wide.float(), "wide_y": torch.softmax(wide.float(), dim=-1),
    }, {"torch": torch.__version__})


@fixture
def safetensors_dtypes():
    """One tensor of every dtype the reader converts, with its values as F64 to compare against."""
    values = torch.tensor([[0.0, -1.5, 2.25], [65504.0, 6.1035156e-05, -3.0e-7]], dtype=torch.float64)
    ints = torch.tensor([[-3, 0, 7], [2**31 - 1, -(2**31), 42]], dtype=torch.int64)
    flags = torch.tensor([[True, False, True], [False, False, True]])
    save("safetensors_dtypes", {
        "f16": values.half(), "f16_as_f64": values.half().double(),
        "bf16": values.bfloat16(), "bf16_as_f64": values.bfloat16().double(),
        "f32": values.float(), "f64": values,
        "i32": ints.int(), "i64": ints * 3, "bool": flags,
        "u8": torch.tensor([0, 1, 255], dtype=torch.uint8), "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
    }, {"format": "pt", "note": "dtype round trip"})


def main(names):
    for name in names or FIXTURES:
        if name not in FIXTURES:
            sys.exit(f"unknown fixture {name!r}; known: {', '.join(FIXTURES)}")
        FIXTURES[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
