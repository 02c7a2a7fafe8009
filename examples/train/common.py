"""Shared by the training scripts: the seed's modules and a safetensors writer.

Debian has no Python safetensors package, so the format (u64 little-endian header length,
JSON header, raw little-endian data) is written by hand, as tests/golden/generate.py does.
"""
import json
import math
import struct

import torch

_DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
}


def _raw_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def save_safetensors(path, tensors, metadata=None):
    """Writes safetensors: names sorted, data aligned to 8 bytes, as the reference writer does."""
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
    path.write_bytes(struct.pack("<Q", len(text)) + text.encode() + b"".join(blobs))
    print(f"wrote {path.name} ({path.stat().st_size} bytes)")


class PositionalEncoding(torch.nn.Module):
    """Seed 000 §3.3, verbatim."""
    def __init__(self, d_model, max_len=5000, dropout=0.1):
        super().__init__()
        self.dropout = torch.nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.dropout(x + self.pe[:, :x.size(1), :])


class AttentionClassifier(torch.nn.Module):
    """Seed 000 §6.1, verbatim."""
    def __init__(self, vocab_size, embed_dim, hidden_dim, num_classes, n_heads=4, num_layers=2, dropout=0.1):
        super().__init__()
        self.embed_dim = embed_dim
        self.embedding = torch.nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.pos_encoding = PositionalEncoding(embed_dim, dropout=dropout)
        encoder_layer = torch.nn.TransformerEncoderLayer(d_model=embed_dim, nhead=n_heads, dim_feedforward=hidden_dim,
                                                         dropout=dropout, batch_first=True, activation="gelu")
        self.transformer = torch.nn.TransformerEncoder(encoder_layer, num_layers)
        self.attn_pool = torch.nn.Sequential(torch.nn.Linear(embed_dim, 1))
        self.classifier = torch.nn.Sequential(torch.nn.Linear(embed_dim, hidden_dim), torch.nn.GELU(),
                                              torch.nn.Dropout(dropout), torch.nn.Linear(hidden_dim, num_classes))

    def forward(self, x):
        mask = (x == 0)
        x = self.embedding(x) * math.sqrt(self.embed_dim)
        x = self.pos_encoding(x)
        x = self.transformer(x, src_key_padding_mask=mask)
        scores = self.attn_pool(x).squeeze(-1)
        scores = scores.masked_fill(mask, float("-inf"))
        attn_weights = torch.softmax(scores, dim=1)
        pooled = torch.bmm(attn_weights.unsqueeze(1), x).squeeze(1)
        return self.classifier(pooled), attn_weights


class CBAM(torch.nn.Module):
    """Seed 000 §4.3, verbatim (plus returning both maps)."""
    def __init__(self, channels, reduction=16, kernel_size=7):
        super().__init__()
        self.channel_attn = torch.nn.Sequential(
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
            torch.nn.Linear(channels, channels // reduction, bias=False), torch.nn.ReLU(inplace=True),
            torch.nn.Linear(channels // reduction, channels, bias=False), torch.nn.Sigmoid())
        self.spatial_attn = torch.nn.Sequential(
            torch.nn.Conv2d(2, 1, kernel_size, padding=kernel_size // 2, bias=False), torch.nn.Sigmoid())

    def forward(self, x):
        b, c, _, _ = x.size()
        ca = self.channel_attn(x).view(b, c, 1, 1)
        x = x * ca
        avg_out = torch.mean(x, dim=1, keepdim=True)
        max_out, _ = torch.max(x, dim=1, keepdim=True)
        sa = self.spatial_attn(torch.cat([avg_out, max_out], dim=1))
        return x * sa, ca.view(b, c), sa


def vit_forward_with_weights(model, images):
    """torchvision's VisionTransformer.forward, block by block, with each block's attention weights
    per head, [N, H, L, L] (its EncoderBlock asks for none): (logits, weights)."""
    x = model._process_input(images)
    x = torch.cat([model.class_token.expand(x.shape[0], -1, -1), x], dim=1) + model.encoder.pos_embedding
    weights = []
    for block in model.encoder.layers:
        y = block.ln_1(x)
        y, w = block.self_attention(y, y, y, need_weights=True, average_attn_weights=False)
        weights.append(w)
        x = x + y
        x = x + block.mlp(block.ln_2(x))
    return model.heads(model.encoder.ln(x)[:, 0]), weights
