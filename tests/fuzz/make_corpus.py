#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/): small valid files
of each kind heed reads, so that libFuzzer starts from the formats' structure. Standard library
only; deterministic (run it again and git sees no change).

    python3 tests/fuzz/make_corpus.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# --- safetensors: u64 header length, JSON header, data (little-endian) ---
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    for name, (dtype, shape, payload) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def floats(fmt, values):
    return struct.pack("<%d%s" % (len(values), fmt), *values)


write("safetensors", "f32_2x3", safetensors({"w": ("F32", [2, 3], floats("f", [0.5, -1, 2, 3, 4, 5]))}))
write("safetensors", "mixed", safetensors({
    "a": ("F64", [3], floats("d", [1, 2, 3])),
    "b": ("F16", [2, 2], floats("e", [1, -2, 0.5, 65504])),
    "c": ("BF16", [1, 2, 1, 2], bytes([0x80, 0x3f, 0x00, 0xc0, 0x00, 0x7f, 0x80, 0xff])),
    "d": ("I64", [2], struct.pack("<2q", 7, -7)),
}, {"format": "pt", "model": "AttentionClassifier", "vocab_size": "10"}))
write("safetensors", "empty_tensor", safetensors({"e": ("F32", [0, 4], b"")}))
write("safetensors", "metadata_only", safetensors({}, {"key": "value"}))
write("safetensors", "scalar_and_bool", safetensors({
    "s": ("F32", [], floats("f", [3.0])),
    "m": ("BOOL", [4], bytes([1, 0, 1, 1])),
}))


# --- .npy: magic, version, header length, dict header padded to 64, data ---
def npy(descr, shape, payload, fortran=False, version=1):
    shape_text = "(%s)" % ("".join("%d," % s for s in shape) if len(shape) == 1 else ", ".join(str(s) for s in shape))
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False", shape_text)
    size_field = 2 if version == 1 else 4
    total = 6 + 2 + size_field + len(header) + 1
    header += " " * (-total % 64) + "\n"
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + payload


write("npy", "f4_3", npy("<f4", [3], floats("f", [1, 2, 3])))
write("npy", "f8_2x2_fortran", npy("<f8", [2, 2], floats("d", [1, 2, 3, 4]), fortran=True))
write("npy", "f4_big_endian", npy(">f4", [2], struct.pack(">2f", 1.5, -2)))
write("npy", "f2_1x2x2", npy("<f2", [1, 2, 2], floats("e", [1, 2, 3, 4])))
write("npy", "i8_v2", npy("<i8", [2, 1, 1, 1], struct.pack("<2q", 5, -5), version=2))
write("npy", "bool_empty", npy("|b1", [0, 3], b""))

# --- JSON ---
write("json", "object", '{"a": [1, -2.5e3, true, false, null], "b": {"c": "d\\u00e9\\n"}}')
write("json", "numbers", "[0, -0, 1e-7, 18446744073709551615, -9223372036854775808, 3.14159]")
write("json", "config", json.dumps({"vocab_size": 100, "embed_dim": 32, "names": ["x", "y"], "nested": [[[]]]}))
write("json", "string_escapes", '"\\"\\\\\\/\\b\\f\\n\\r\\t\\ud83d\\ude00"')


# --- module: a tiny AttentionClassifier with its config, PyTorch's state_dict names ---
def classifier(vocab, embed, hidden, classes, heads, layers, max_len, with_pe=True):
    shapes = {"embedding.weight": [vocab, embed]}
    if with_pe:
        shapes["pos_encoding.pe"] = [1, max_len, embed]
    for i in range(layers):
        p = "transformer.layers.%d." % i
        shapes.update({
            p + "self_attn.in_proj_weight": [3 * embed, embed], p + "self_attn.in_proj_bias": [3 * embed],
            p + "self_attn.out_proj.weight": [embed, embed], p + "self_attn.out_proj.bias": [embed],
            p + "linear1.weight": [hidden, embed], p + "linear1.bias": [hidden],
            p + "linear2.weight": [embed, hidden], p + "linear2.bias": [embed],
            p + "norm1.weight": [embed], p + "norm1.bias": [embed],
            p + "norm2.weight": [embed], p + "norm2.bias": [embed],
        })
    shapes.update({
        "attn_pool.0.weight": [1, embed], "attn_pool.0.bias": [1],
        "classifier.0.weight": [hidden, embed], "classifier.0.bias": [hidden],
        "classifier.3.weight": [classes, hidden], "classifier.3.bias": [classes],
    })
    tensors, k = {}, 0
    for name, shape in shapes.items():
        count = 1
        for s in shape:
            count *= s
        tensors[name] = ("F32", shape, floats("f", [((k + i) * 37 % 17 - 8) / 16 for i in range(count)]))
        k += count
    config = {"vocab_size": vocab, "embed_dim": embed, "hidden_dim": hidden, "num_classes": classes,
              "n_heads": heads, "num_layers": layers, "max_len": max_len}
    return safetensors(tensors, {"heed.module": "AttentionClassifier", "heed.config": json.dumps(config)})


write("module", "classifier_1_layer", classifier(5, 4, 6, 3, 2, 1, 8))
write("module", "classifier_2_layers_computed_pe", classifier(7, 2, 3, 2, 1, 2, 16, with_pe=False))

# --- attention (fuzz_attention.cpp reads the bytes as choices, not as a format): one input per
# scalar type × mask kind, with the shapes and options bytes from a fixed generator ---
import random

rng = random.Random(46)
for scalar in range(4):
    for mask in range(11):
        body = bytes([scalar, rng.randrange(256), rng.randrange(256)] + [rng.randrange(256) for _ in range(13)] + [mask]
                     + [rng.randrange(256) for _ in range(48)])
        write("attention", "type%d_mask%02d" % (scalar, mask), body)

# --- modules (fuzz_modules.cpp, choices too): one input per module kind ---
for kind in range(7):
    for variant in range(4):
        body = bytes([kind] + [rng.randrange(2, 256) for _ in range(80)])
        write("modules", "kind%d_%d" % (kind, variant), body)
