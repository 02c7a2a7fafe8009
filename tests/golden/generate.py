#!/usr/bin/python3
"""Writes heed's golden fixtures: inputs, parameters and PyTorch's outputs, as safetensors.

Run with Debian's interpreter after `apt-get install python3-torch python3-numpy` (PyTorch
1.13; python3-torchvision too for the fixture vision_transformer; the `python3` earlier on PATH
may be another interpreter without torch):

    /usr/bin/python3 tests/golden/generate.py            # all fixtures
    /usr/bin/python3 tests/golden/generate.py softmax    # only the named ones

The fixtures are committed; the tests read them and never need PyTorch. Every fixture is
seeded, so a rerun with the same PyTorch and BLAS (Debian's reference BLAS wrote them: see
docs/decisions.md, "Fixtures and the BLAS") rewrites the same bytes.
Debian has no Python safetensors package, so the format is written by hand, in
examples/train/common.py (shared with the demo's training scripts, as are the seed's modules).
"""
import json
import math
import pathlib
import struct
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
# The seed's PyTorch modules and the safetensors writer, shared with the demo's training scripts.
sys.path.insert(0, str(HERE.parent.parent / "examples" / "train"))
from common import CBAM, AttentionClassifier, PositionalEncoding, save_safetensors, vit_forward_with_weights  # noqa: E402
FIXTURES = {}


def save(name, tensors, metadata=None):
    """Writes tests/golden/<name>.safetensors."""
    path = HERE / f"{name}.safetensors"
    save_safetensors(path, tensors, metadata)


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


def seed_sdpa(Q, K, V, mask=None, fill=-1e9):
    """Seed 000 §1.2 / seed 002 §4, verbatim: masked_fill(mask == 0, -1e9)."""
    d_k = Q.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, fill)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, V), weights


@fixture
def sdpa_seed():
    """The seeds' scaled_dot_product_attention, without and with a mask (seed shapes)."""
    torch.manual_seed(1)
    Q = torch.randn(2, 4, 5, 8)
    K = torch.randn(2, 4, 6, 8)
    V = torch.randn(2, 4, 6, 16)
    out, w = seed_sdpa(Q, K, V)
    mask = torch.rand(2, 1, 5, 6) > 0.3      # [B, 1, Lq, Lk], broadcast over heads; 1 = keep
    mask[:, :, :, 0] = True                   # no row fully masked: -1e9 and -inf then agree
    out_m, w_m = seed_sdpa(Q, K, V, mask)
    pad = torch.ones(2, 1, 1, 6, dtype=torch.bool)  # the seed's [batch, 1, 1, seq_len_k] padding mask
    pad[1, :, :, 4:] = False
    out_p, w_p = seed_sdpa(Q, K, V, pad)
    full = mask.clone()
    full[0, 0, 2, :] = False                  # a fully masked row: -1e9 gives uniform weights
    out_f, w_f = seed_sdpa(Q, K, V, full)
    save("sdpa_seed", {"q": Q, "k": K, "v": V, "output": out, "weights": w,
                       "mask": mask, "output_masked": out_m, "weights_masked": w_m,
                       "pad": pad, "output_pad": out_p, "weights_pad": w_p,
                       "full_mask": full, "output_full": out_f, "weights_full": w_f})


@fixture
def causal_self_attention():
    """Seed §3.1's causal scores (triu(diagonal=1) filled with -inf) on projected-like inputs."""
    torch.manual_seed(2)
    B, H, L, d = 2, 8, 20, 32
    Q, K, V = (torch.randn(B, H, L, d) for _ in range(3))
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d)
    causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    save("causal_self_attention", {"q": Q, "k": K, "v": V, "weights": weights, "output": torch.matmul(weights, V)})


@fixture
def seed002_scores():
    """Seed 002: dot_product_attention(query, keys) and AdditiveAttention(hidden_dim)(query, keys)."""
    torch.manual_seed(3)
    batch, seq_len, hidden = 3, 7, 24
    query = torch.randn(batch, hidden)
    keys = torch.randn(batch, seq_len, hidden)
    dot = torch.softmax(torch.matmul(query.unsqueeze(1), keys.transpose(1, 2)).squeeze(1), dim=-1)

    class AdditiveAttention(torch.nn.Module):
        def __init__(self, hidden_dim):
            super().__init__()
            self.query_proj = torch.nn.Linear(hidden_dim, hidden_dim)
            self.key_proj = torch.nn.Linear(hidden_dim, hidden_dim)
            self.score = torch.nn.Linear(hidden_dim, 1)

        def forward(self, query, keys):
            projected_query = self.query_proj(query).unsqueeze(1)
            projected_keys = self.key_proj(keys)
            scores = self.score(torch.tanh(projected_query + projected_keys)).squeeze(-1)
            return torch.softmax(scores, dim=-1)

    additive = AdditiveAttention(hidden).eval()
    with torch.no_grad():
        add_w = additive(query, keys)
    tensors = {"query": query, "keys": keys, "dot_weights": dot, "additive_weights": add_w}
    tensors.update({f"additive.{k}": v for k, v in additive.state_dict().items()})
    save("seed002_scores", tensors)


@fixture
def sharpening():
    """Seed 002's dims loop: softmax(k q / sqrt(d)) and softmax(k q) for d in 16, 64, 256."""
    torch.manual_seed(4)
    tensors = {}
    for d in (16, 64, 256):
        q = torch.randn(d)
        k = torch.randn(10, d)
        tensors[f"q{d}"] = q
        tensors[f"k{d}"] = k
        tensors[f"scaled{d}"] = torch.softmax(torch.matmul(k, q) / math.sqrt(d), dim=0)
        tensors[f"unscaled{d}"] = torch.softmax(torch.matmul(k, q), dim=0)
    save("sharpening", tensors)


class SEBlock(torch.nn.Module):
    """Seed 000 §4.1, verbatim."""
    def __init__(self, channels, reduction=16):
        super().__init__()
        self.squeeze = torch.nn.AdaptiveAvgPool2d(1)
        self.excitation = torch.nn.Sequential(
            torch.nn.Linear(channels, channels // reduction, bias=False), torch.nn.ReLU(inplace=True),
            torch.nn.Linear(channels // reduction, channels, bias=False), torch.nn.Sigmoid())

    def forward(self, x):
        b, c, _, _ = x.size()
        y = self.excitation(self.squeeze(x).view(b, c)).view(b, c, 1, 1)
        return x * y.expand_as(x), y.view(b, c)


class SpatialAttention(torch.nn.Module):
    """Seed 000 §4.2, verbatim (plus returning the map)."""
    def __init__(self, kernel_size=7):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 1, kernel_size, padding=kernel_size // 2, bias=False)
        self.sigmoid = torch.nn.Sigmoid()

    def forward(self, x):
        avg_out = torch.mean(x, dim=1, keepdim=True)
        max_out, _ = torch.max(x, dim=1, keepdim=True)
        scale = self.sigmoid(self.conv(torch.cat([avg_out, max_out], dim=1)))
        return x * scale, scale


def _prefixed(prefix, module):
    return {prefix + k: v for k, v in module.state_dict().items()}


def formula_input(shape):
    """x[i] = sin(0.7 i) + 0.5 cos(0.013 i) over the flat index, in float64, then float32.
    The C++ tests compute the same tensor, so a large input need not be stored."""
    i = torch.arange(math.prod(shape), dtype=torch.float64)
    return (torch.sin(0.7 * i) + 0.5 * torch.cos(0.013 * i)).float().reshape(shape)


@fixture
def vision_modules():
    """SEBlock, SpatialAttention (k = 3, 7), CBAM and torchvision's SqueezeExcitation on [2, 20, 7, 9]."""
    from torchvision.ops import SqueezeExcitation
    torch.manual_seed(5)
    x = torch.randn(2, 20, 7, 9)
    se, sa3, sa7, cbam = SEBlock(20, 4).eval(), SpatialAttention(3).eval(), SpatialAttention(7).eval(), CBAM(20, 4, 7).eval()
    tv = SqueezeExcitation(20, 6).eval()
    with torch.no_grad():
        se_y, se_w = se(x)
        sa3_y, sa3_m = sa3(x)
        sa7_y, sa7_m = sa7(x)
        cbam_y, cbam_ca, cbam_sa = cbam(x)
        tv_y = tv(x)
    t = {"x": x, "se.output": se_y, "se.weights": se_w, "sa3.output": sa3_y, "sa3.map": sa3_m,
         "sa7.output": sa7_y, "sa7.map": sa7_m, "cbam.output": cbam_y, "cbam.channel": cbam_ca,
         "cbam.spatial": cbam_sa, "tv.output": tv_y}
    for prefix, m in (("se.", se), ("sa3.", sa3), ("sa7.", sa7), ("cbam.", cbam), ("tv.", tv)):
        t.update(_prefixed(prefix + "module.", m))
    save("vision_modules", t)


@fixture
def vision_seed_shapes():
    """The seed's shapes, [4, 256, 32, 32], on formula_input: both maps in full, outputs at every 8th pixel."""
    torch.manual_seed(6)
    x = formula_input((4, 256, 32, 32))
    se, sa, cbam = SEBlock(256, 16).eval(), SpatialAttention(7).eval(), CBAM(256, 16, 7).eval()
    with torch.no_grad():
        se_y, se_w = se(x)
        sa_y, sa_m = sa(x)
        cbam_y, cbam_ca, cbam_sa = cbam(x)
    sub = (slice(None), slice(None), slice(None, None, 8), slice(None, None, 8))
    t = {"x_checksum": x.double().sum().reshape(1), "se.output_sub": se_y[sub].contiguous(), "se.weights": se_w,
         "sa.output_sub": sa_y[sub].contiguous(), "sa.map": sa_m,
         "cbam.output_sub": cbam_y[sub].contiguous(), "cbam.channel": cbam_ca, "cbam.spatial": cbam_sa}
    for prefix, m in (("se.", se), ("sa.", sa), ("cbam.", cbam)):
        t.update(_prefixed(prefix + "module.", m))
    save("vision_seed_shapes", t)


def _mha_case(t, name, mha, query, key, value, **kwargs):
    """Runs nn.MultiheadAttention (eval, no grad) with averaged and per-head weights."""
    with torch.no_grad():
        out, w_avg = mha(query, key, value, need_weights=True, average_attn_weights=True, **kwargs)
        _, w_heads = mha(query, key, value, need_weights=True, average_attn_weights=False, **kwargs)
    t.update(_prefixed(name + ".module.", mha))
    t.update({name + ".query": query, name + ".key": key, name + ".value": value,
              name + ".output": out, name + ".weights_avg": w_avg, name + ".weights_heads": w_heads})


@fixture
def multihead_attention():
    """torch.nn.MultiheadAttention (batch_first) with E = 24, H = 3 and odd lengths."""
    torch.manual_seed(7)
    E, H, B = 24, 3, 2
    t = {}
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    x = torch.randn(B, 7, E)
    pad = torch.zeros(B, 7, dtype=torch.bool)
    pad[1, 5:] = True
    t["self.key_padding_mask"] = pad
    _mha_case(t, "self", mha, x, x, x, key_padding_mask=pad)

    cross = torch.nn.MultiheadAttention(E, H, kdim=16, vdim=20, batch_first=True).eval()
    _mha_case(t, "cross", cross, torch.randn(B, 7, E), torch.randn(B, 13, 16), torch.randn(B, 13, 20))

    extra = torch.nn.MultiheadAttention(E, H, add_bias_kv=True, add_zero_attn=True, batch_first=True).eval()
    mask = torch.rand(7, 13) > 0.7            # True = NOT allowed (PyTorch's bool attn_mask)
    mask[:, 0] = False
    t["extra.attn_mask"] = mask
    _mha_case(t, "extra", extra, torch.randn(B, 7, E), torch.randn(B, 13, E), torch.randn(B, 13, E), attn_mask=mask)

    biased = torch.nn.MultiheadAttention(E, H, bias=False, batch_first=True).eval()
    bias = torch.randn(B * H, 7, 13)
    t["biased.attn_bias"] = bias
    y = torch.randn(B, 13, E)
    _mha_case(t, "biased", biased, torch.randn(B, 7, E), y, y, attn_mask=bias)

    causal = torch.triu(torch.ones(13, 13, dtype=torch.bool), diagonal=1)
    z = torch.randn(B, 13, E)
    _mha_case(t, "causal", mha, z, z, z, attn_mask=causal)

    full = torch.zeros(B, 7, dtype=torch.bool)
    full[1, :] = True                          # every key of batch 1 is padding: NaN in 1.13
    t["masked.key_padding_mask"] = full
    _mha_case(t, "masked", mha, x, x, x, key_padding_mask=full)
    save("multihead_attention", t)


# Rotary position embeddings (RoPE, Su et al. 2021, https://arxiv.org/abs/2104.09864) and ALiBi
# (Press et al. 2021, https://arxiv.org/abs/2108.12409). PyTorch 1.13 has neither; these are
# written the way the model code that uses them computes them (GPT-NeoX / Llama: rotate_half;
# GPT-J: rotate_every_two; BLOOM: build_alibi_tensor's slopes), in float64.
def rope_tables(positions, dim, base):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = torch.outer(positions.to(torch.float64), inv_freq)       # [L, dim / 2]
    return freqs.cos(), freqs.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rope(x, starts, dim, base, style):
    """x [B, H, L, d]; row i of batch row b at position starts[b] + i; the first `dim` of d rotate."""
    out = x.clone()
    for b, start in enumerate(starts):
        cos, sin = rope_tables(torch.arange(start, start + x.shape[2]), dim, base)
        if style == "half":
            cos, sin = torch.cat((cos, cos), -1), torch.cat((sin, sin), -1)
            rot = rotate_half
        else:
            cos, sin = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
            rot = rotate_every_two
        xr = x[b, :, :, :dim]
        out[b, :, :, :dim] = xr * cos + rot(xr) * sin
    return out


def alibi_slopes(n_heads):
    """BLOOM's slopes: a geometric sequence for the largest power of two <= n_heads, the rest
    interleaved from the next power's sequence."""
    closest = 2 ** math.floor(math.log2(n_heads))
    base = 2.0 ** (-(2.0 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, closest + 1)]
    if closest != n_heads:
        extra_base = 2.0 ** (-(2.0 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra_base ** p for p in range(1, 1 + 2 * (n_heads - closest), 2)]
    return torch.tensor(slopes, dtype=torch.float64)


@fixture
def positions():
    """RoPE in both conventions, full and partial, two bases, per-row start positions (one
    beyond a 4096-position table); ALiBi slopes for 1-12, 16, 20 and 64 heads."""
    torch.manual_seed(11)
    t = {}
    x = torch.randn(2, 3, 5, 16, dtype=torch.float64)
    t["x"] = x
    cases = {"half_full": (16, 10000.0, "half"), "half_partial": (8, 10000.0, "half"),
             "interleaved_full": (16, 500.0, "interleaved"), "interleaved_partial": (6, 10000.0, "interleaved")}
    for name, (dim, base, style) in cases.items():
        for starts_name, starts in {"zero": [0, 0], "rows": [3, 17], "far": [4094, 9000]}.items():
            t[f"{name}.{starts_name}"] = apply_rope(x, starts, dim, base, style)
    for n in list(range(1, 13)) + [16, 20, 64]:
        t[f"alibi.{n}"] = alibi_slopes(n)
    save("positions", t, {"torch": torch.__version__})


@fixture
def transformer_decoder():
    """nn.TransformerDecoderLayer / nn.TransformerDecoder (relu post-norm, gelu pre-norm, a
    2-layer stack with a final norm): causal target, padded target and memory keys, a bool
    memory_mask."""
    torch.manual_seed(9)
    E, H, F, B, L, S = 24, 3, 40, 2, 9, 13
    tgt, memory = torch.randn(B, L, E), torch.randn(B, S, E)
    causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)    # True = NOT allowed
    tgt_pad = torch.zeros(B, L, dtype=torch.bool)
    tgt_pad[1, 7:] = True
    mem_pad = torch.zeros(B, S, dtype=torch.bool)
    mem_pad[0, 10:] = True
    mem_mask = torch.rand(L, S) > 0.8
    mem_mask[:, 0] = False
    t = {"tgt": tgt, "memory": memory, "tgt_pad": tgt_pad, "mem_pad": mem_pad, "mem_mask": mem_mask}
    post = torch.nn.TransformerDecoderLayer(E, H, F, batch_first=True).eval()
    pre = torch.nn.TransformerDecoderLayer(E, H, F, activation="gelu", norm_first=True, batch_first=True).eval()
    dec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(E, H, F, batch_first=True), num_layers=2,
                                      norm=torch.nn.LayerNorm(E)).eval()
    with torch.no_grad():
        t["post.output"] = post(tgt, memory, tgt_mask=causal, memory_key_padding_mask=mem_pad)
        t["pre.output"] = pre(tgt, memory, tgt_key_padding_mask=tgt_pad, memory_mask=mem_mask)
        t["dec.output"] = dec(tgt, memory, tgt_mask=causal, memory_key_padding_mask=mem_pad)
    for prefix, m in (("post.", post), ("pre.", pre), ("dec.", dec)):
        t.update(_prefixed(prefix + "module.", m))
    save("transformer_decoder", t, {"torch": torch.__version__})


class LlamaAttention(torch.nn.Module):
    """Llama's attention layer as the Hugging Face model code computes it (float32 rotary tables,
    rotate_half, repeat_kv for grouped heads, a causal mask), written out for PyTorch 1.13."""
    def __init__(self, E, H, Hkv, base=10000.0, bias=False):
        super().__init__()
        self.H, self.Hkv, self.hd, self.base = H, Hkv, E // H, base
        self.q_proj = torch.nn.Linear(E, H * self.hd, bias=bias)
        self.k_proj = torch.nn.Linear(E, Hkv * self.hd, bias=bias)
        self.v_proj = torch.nn.Linear(E, Hkv * self.hd, bias=bias)
        self.o_proj = torch.nn.Linear(H * self.hd, E, bias=False)

    def forward(self, x, start=0):
        B, L, _ = x.shape
        q = self.q_proj(x).view(B, L, self.H, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, L, self.Hkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, L, self.Hkv, self.hd).transpose(1, 2)
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(start, start + L).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.H // self.Hkv, dim=1)      # repeat_kv: head h reads h // G
        v = v.repeat_interleave(self.H // self.Hkv, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        scores = scores.masked_fill(torch.triu(torch.ones(L, L, dtype=torch.bool), 1), -math.inf)
        out = torch.softmax(scores, dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, L, self.H * self.hd))


@fixture
def llama_attention():
    """LlamaAttention with grouped heads (8 over 2, no biases) and multi-query attention with
    q/k/v biases and Llama 3's base (8 over 1)."""
    torch.manual_seed(13)
    t = {}
    for name, (Hkv, base, bias) in {"gqa": (2, 10000.0, False), "mqa": (1, 500000.0, True)}.items():
        layer = LlamaAttention(64, 8, Hkv, base, bias).eval()
        x = torch.randn(2, 11, 64)
        with torch.no_grad():
            y = layer(x)
        t.update(_prefixed(name + ".module.", layer))
        t.update({name + ".x": x, name + ".output": y})
    save("llama_attention", t, {"torch": torch.__version__})


class RMSNorm(torch.nn.Module):
    """torch.nn.RMSNorm as PyTorch 2.4 defines it (1.13 has none): x * rsqrt(mean(x^2) + eps) * weight,
    eps=None meaning the machine epsilon of x's dtype."""
    def __init__(self, d, eps=None, elementwise_affine=True):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(d)) if elementwise_affine else None

    def forward(self, x):
        eps = torch.finfo(x.dtype).eps if self.eps is None else self.eps
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        return y if self.weight is None else y * self.weight


class SwiGLU(torch.nn.Module):
    """Llama's MLP (Hugging Face LlamaMLP): down_proj(silu(gate_proj(x)) * up_proj(x))."""
    def __init__(self, d, hidden, bias=False):
        super().__init__()
        self.gate_proj = torch.nn.Linear(d, hidden, bias=bias)
        self.up_proj = torch.nn.Linear(d, hidden, bias=bias)
        self.down_proj = torch.nn.Linear(hidden, d, bias=bias)

    def forward(self, x):
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


@fixture
def llama_blocks():
    """RMSNorm (eps 1e-5 with a trained-like weight, eps=None, no weight) and SwiGLU (without and
    with biases) on [3, 7, 48], x with an offset of 3 so that mean(x^2) is not near 1."""
    torch.manual_seed(17)
    t = {"x": torch.randn(3, 7, 48) + 3.0, "small": torch.randn(2, 5, 48) * 1e-3}
    for name, norm in {"eps": RMSNorm(48, 1e-5), "default": RMSNorm(48), "plain": RMSNorm(48, 1e-5, False)}.items():
        if norm.weight is not None:
            with torch.no_grad():
                norm.weight.copy_(1 + 0.3 * torch.randn(48))
            t[f"norm_{name}.weight"] = norm.weight.detach().clone()
        with torch.no_grad():
            t[f"norm_{name}.output"] = norm(t["x"])
            t[f"norm_{name}.small_output"] = norm(t["small"])
    for name, bias in {"mlp": False, "mlp_bias": True}.items():
        mlp = SwiGLU(48, 80, bias).eval()
        with torch.no_grad():
            t[f"{name}.output"] = mlp(t["x"])
        t.update(_prefixed(f"{name}.module.", mlp))
    save("llama_blocks", t, {"torch": torch.__version__})


class SeedEncoderLayer(torch.nn.Module):
    """Seed 000 §5.1's pre-norm TransformerEncoderLayer, verbatim."""
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1):
        super().__init__()
        self.self_attn = torch.nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.ffn = torch.nn.Sequential(torch.nn.Linear(d_model, d_ff), torch.nn.GELU(), torch.nn.Dropout(dropout),
                                       torch.nn.Linear(d_ff, d_model))
        self.norm1 = torch.nn.LayerNorm(d_model)
        self.norm2 = torch.nn.LayerNorm(d_model)
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, x, key_padding_mask=None):
        residual = x
        x = self.norm1(x)
        attn_out, _ = self.self_attn(x, x, x, key_padding_mask=key_padding_mask)
        x = residual + self.dropout(attn_out)
        residual = x
        x = self.norm2(x)
        return residual + self.dropout(self.ffn(x))


class SeedEncoder(torch.nn.Module):
    def __init__(self, d_model, n_heads, d_ff, num_layers, dropout=0.1):
        super().__init__()
        self.layers = torch.nn.ModuleList([SeedEncoderLayer(d_model, n_heads, d_ff, dropout) for _ in range(num_layers)])
        self.final_norm = torch.nn.LayerNorm(d_model)

    def forward(self, x, key_padding_mask=None):
        for layer in self.layers:
            x = layer(x, key_padding_mask)
        return self.final_norm(x)


@fixture
def transformer_encoder():
    """nn.TransformerEncoderLayer / nn.TransformerEncoder (relu post-norm, gelu pre-norm) and the seed's encoder."""
    torch.manual_seed(8)
    E, H, F, B, L = 24, 3, 40, 2, 13
    x = torch.randn(B, L, E)
    pad = torch.zeros(B, L, dtype=torch.bool)
    pad[0, 10:] = True
    t = {"x": x, "pad": pad}
    post = torch.nn.TransformerEncoderLayer(E, H, F, batch_first=True).eval()
    pre = torch.nn.TransformerEncoderLayer(E, H, F, activation="gelu", norm_first=True, batch_first=True).eval()
    enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, H, F, activation="gelu", batch_first=True),
                                      num_layers=2, norm=torch.nn.LayerNorm(E)).eval()
    seed = SeedEncoder(E, H, F, 2).eval()
    with torch.no_grad():
        t["post.output"] = post(x, src_key_padding_mask=pad)
        t["post.output_nomask"] = post(x)
        t["pre.output"] = pre(x, src_key_padding_mask=pad)
        t["enc.output"] = enc(x, src_key_padding_mask=pad)
        causal = torch.triu(torch.full((L, L), float("-inf")), diagonal=1)
        t["enc.output_causal"] = enc(x, mask=causal)
        t["seed.output"] = seed(x, key_padding_mask=pad)
    for prefix, m in (("post.", post), ("pre.", pre), ("enc.", enc), ("seed.", seed)):
        t.update(_prefixed(prefix + "module.", m))
    save("transformer_encoder", t)


@fixture
def torch_masks():
    """The masks PyTorch's Transformer modules take, in the shapes and dtypes they take them:
    nn.TransformerEncoder with a float mask [L, L] (random values and -inf) and a bool mask
    [B*H, L, L] (a different pattern per head); nn.TransformerDecoder with
    generate_square_subsequent_mask as tgt_mask (float [L, L]) and a float memory_mask [B*H, L, S]."""
    torch.manual_seed(23)
    E, H, F, B, L, S = 24, 3, 40, 2, 11, 7
    x, memory = torch.randn(B, L, E), torch.randn(B, S, E)
    float_mask = torch.randn(L, L)
    float_mask[torch.rand(L, L) > 0.7] = float("-inf")
    float_mask.fill_diagonal_(0.0)                  # every query keeps a key
    head_mask = torch.rand(B * H, L, L) > 0.6       # True = NOT allowed
    head_mask[:, torch.arange(L), torch.arange(L)] = False
    memory_mask = torch.randn(B * H, L, S)
    memory_mask[:, :, 3] = float("-inf")
    t = {"x": x, "memory": memory, "float_mask": float_mask, "head_mask": head_mask, "memory_mask": memory_mask}
    enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, H, F, batch_first=True), num_layers=2).eval()
    dec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(E, H, F, batch_first=True), num_layers=2).eval()
    with torch.no_grad():
        t["enc.output_float"] = enc(x, mask=float_mask)
        t["enc.output_heads"] = enc(x, mask=head_mask)
        subsequent = torch.nn.Transformer.generate_square_subsequent_mask(L)
        t["subsequent"] = subsequent
        t["dec.output"] = dec(x, memory, tgt_mask=subsequent, memory_mask=memory_mask)
    for prefix, m in (("enc.", enc), ("dec.", dec)):
        t.update(_prefixed(prefix + "module.", m))
    save("torch_masks", t, {"torch": torch.__version__})


@fixture
def sparse_attention():
    """nn.MultiheadAttention and a 2-layer nn.TransformerEncoder with Longformer's and BigBird's
    patterns written out as dense boolean masks (true = not allowed), which heed gets as
    mask::Sparse. Longformer: a window of 6 either side plus global tokens 0 and 40 (every row
    of the batch). Blocks: 16-blocks over L = 75 (5 blocks, the last of 11), a fixed layout."""
    torch.manual_seed(15)
    E, H, F, B, L = 32, 4, 48, 2, 75
    x = torch.randn(B, L, E)
    pad = torch.zeros(B, L, dtype=torch.bool)
    pad[1, 70:] = True
    i = torch.arange(L)
    window = (i[None, :] - i[:, None]).abs() <= 6
    is_global = torch.zeros(L, dtype=torch.bool)
    is_global[[0, 40]] = True
    longformer = window | is_global[:, None] | is_global[None, :]
    layout = torch.tensor([[1, 1, 0, 0, 1],
                           [1, 1, 1, 0, 0],
                           [0, 1, 1, 1, 0],
                           [1, 0, 0, 1, 1],
                           [0, 0, 1, 1, 1]], dtype=torch.bool)
    blocks = layout[i // 16][:, i // 16]
    t = {"x": x, "pad": pad, "global": is_global, "layout": layout}
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, H, F, activation="gelu", batch_first=True),
                                      num_layers=2, norm=torch.nn.LayerNorm(E)).eval()
    with torch.no_grad():
        for name, allowed in (("longformer", longformer), ("blocks", blocks)):
            out, w = mha(x, x, x, key_padding_mask=pad, attn_mask=~allowed)
            t[f"mha.{name}.output"], t[f"mha.{name}.weights"] = out, w
            t[f"enc.{name}.output"] = enc(x, mask=~allowed, src_key_padding_mask=pad)
    t.update(_prefixed("mha.module.", mha))
    t.update(_prefixed("enc.module.", enc))
    save("sparse_attention", t)


class SeedMultiHeadAttention(torch.nn.Module):
    """Seed 000 §2.1, verbatim (dropout is inactive in eval mode)."""
    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__()
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = torch.nn.Linear(d_model, d_model)
        self.w_k = torch.nn.Linear(d_model, d_model)
        self.w_v = torch.nn.Linear(d_model, d_model)
        self.w_o = torch.nn.Linear(d_model, d_model)
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        batch_size = query.size(0)
        Q = self.w_q(query).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)
        K = self.w_k(key).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)
        V = self.w_v(value).view(batch_size, -1, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attn_weights = self.dropout(torch.softmax(scores, dim=-1))
        context = torch.matmul(attn_weights, V).transpose(1, 2).contiguous().view(batch_size, -1, self.d_model)
        return self.w_o(context), attn_weights


class SeedProjected(torch.nn.Module):
    """Seed 000 §3.1 SelfAttention and §3.2 CrossAttention share this body (out_proj)."""
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.w_q = torch.nn.Linear(d_model, d_model)
        self.w_k = torch.nn.Linear(d_model, d_model)
        self.w_v = torch.nn.Linear(d_model, d_model)
        self.out_proj = torch.nn.Linear(d_model, d_model)

    def forward(self, target, source, causal=False, mask=None):
        B, Lt, Ls = target.size(0), target.size(1), source.size(1)
        Q = self.w_q(target).view(B, Lt, self.n_heads, self.d_k).transpose(1, 2)
        K = self.w_k(source).view(B, Ls, self.n_heads, self.d_k).transpose(1, 2)
        V = self.w_v(source).view(B, Ls, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.d_k)
        if causal:
            causal_mask = torch.triu(torch.ones(Lt, Ls, dtype=torch.bool), diagonal=1)
            scores = scores.masked_fill(causal_mask.unsqueeze(0).unsqueeze(0), float("-inf"))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attn_weights = torch.softmax(scores, dim=-1)
        context = torch.matmul(attn_weights, V).transpose(1, 2).contiguous().view(B, Lt, self.d_model)
        return self.out_proj(context), attn_weights


@fixture
def seed_modules():
    """The seeds' MultiHeadAttention, SelfAttention, CrossAttention, PositionalEncoding, AttentionClassifier."""
    torch.manual_seed(9)
    d, H, B = 24, 3, 2
    t = {}
    mha = SeedMultiHeadAttention(d, H).eval()
    q, kv = torch.randn(B, 7, d), torch.randn(B, 13, d)
    keep = torch.ones(B, 1, 1, 13, dtype=torch.bool)
    keep[1, :, :, 9:] = False
    with torch.no_grad():
        t["mha.output"], t["mha.weights"] = mha(q, kv, kv)
        t["mha.output_masked"], t["mha.weights_masked"] = mha(q, kv, kv, keep)
    t.update({"mha.q": q, "mha.kv": kv, "mha.keep": keep})
    t.update(_prefixed("mha.module.", mha))

    sa, ca = SeedProjected(d, H).eval(), SeedProjected(d, H).eval()
    x, src = torch.randn(B, 13, d), torch.randn(B, 11, d)
    allowed = torch.rand(7, 11) > 0.3
    allowed[:, 0] = True
    with torch.no_grad():
        t["self.output"], t["self.weights"] = sa(x, x)
        t["self.output_causal"], t["self.weights_causal"] = sa(x, x, causal=True)
        t["cross.output"], t["cross.weights"] = ca(x[:, :7], src)
        t["cross.output_masked"], t["cross.weights_masked"] = ca(x[:, :7], src, mask=allowed)
    t.update({"self.x": x, "cross.source": src, "cross.allowed": allowed})
    t.update(_prefixed("self.module.", sa))
    t.update(_prefixed("cross.module.", ca))

    t["pe24"] = PositionalEncoding(24).pe[:, :100].contiguous()
    t["pe128"] = PositionalEncoding(128).pe[:, :60].contiguous()

    clf = AttentionClassifier(vocab_size=50, embed_dim=24, hidden_dim=40, num_classes=5, n_heads=3).eval()
    ids = torch.randint(1, 50, (4, 9))
    ids[1, 6:] = 0
    ids[3, 2:] = 0
    with torch.no_grad():
        t["clf.logits"], t["clf.weights"] = clf(ids)
    t["clf.ids"] = ids
    # the 5000-row positional table is left out: heed computes the same one
    t.update({k: v for k, v in _prefixed("clf.module.", clf).items() if not k.endswith("pos_encoding.pe")})
    save("seed_modules", t)


@fixture
def npy():
    """NumPy's own .npy files: versions 1.0/2.0/3.0, each supported dtype, Fortran order,
    big-endian, and dtypes heed refuses. The values are a formula the test recomputes."""
    import numpy as np
    out = HERE / "npy"
    out.mkdir(exist_ok=True)
    base = np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 0.5 - 3.0   # x[i,j,k] = 6i + 2j + k/2 - 3
    def write(name, array, version=None):
        with open(out / f"{name}.npy", "wb") as f:
            np.lib.format.write_array(f, array, version=version)
    write("f4_v1", base.astype("<f4"), (1, 0))
    write("f4_v2", base.astype("<f4"), (2, 0))
    write("f4_v3", base.astype("<f4"), (3, 0))
    write("f8", base.astype("<f8"))
    write("i4", (base * 2).astype("<i4"))
    write("i8", (base * 2).astype("<i8"))
    write("b1", base > 0)
    write("f8_fortran", np.asfortranarray(base))
    write("f4_big_endian", base.astype(">f4"))
    write("c8_unsupported", base.astype("<c8"))
    write("u3_unsupported", np.array(["abc", "de"]))
    print(f"wrote {out.relative_to(HERE.parent.parent)}/*.npy")


@fixture
def bmm():
    """torch.bmm and torch.baddbmm (seed 002's first tip) on [4, 7, 50] · [4, 50, 21]: input of
    every broadcast rank, beta and alpha other than 1, beta = 0 over a NaN input, and bfloat16
    (PyTorch 1.13's CPU bfloat16 product rounds as it sums: it is kept beside the float result of
    the same rounded inputs)."""
    torch.manual_seed(12)
    a = torch.randn(4, 7, 50)
    b = torch.randn(4, 50, 21)
    full = torch.randn(4, 7, 21)
    row = torch.randn(21)
    plane = torch.randn(7, 21)
    column = torch.randn(4, 7, 1)
    nan = torch.full((4, 7, 21), math.nan)
    a16, b16, full16 = a.bfloat16(), b.bfloat16(), full.bfloat16()
    save("bmm", {
        "a": a, "b": b, "full": full, "row": row, "plane": plane, "column": column,
        "bmm": torch.bmm(a, b),
        "baddbmm_full": torch.baddbmm(full, a, b),
        "baddbmm_row": torch.baddbmm(row, a, b, beta=0.5, alpha=-2.0),
        "baddbmm_plane": torch.baddbmm(plane, a, b, beta=-1.5, alpha=0.25),
        "baddbmm_column": torch.baddbmm(column, a, b, beta=0.75),
        "baddbmm_nan_beta0": torch.baddbmm(nan, a, b, beta=0.0, alpha=2.0),
        "a_bf16": a16, "b_bf16": b16, "full_bf16": full16,
        "baddbmm_bf16": torch.baddbmm(full16, a16, b16, beta=0.5, alpha=-2.0),
        # the same on the bfloat16 inputs in float: the value a result rounded once rounds
        "baddbmm_bf16_in_float": torch.baddbmm(full16.float(), a16.float(), b16.float(), beta=0.5, alpha=-2.0),
    }, {"torch": torch.__version__})


@fixture
def conv2d_strided():
    """torch.nn.Conv2d with strides and dilations: a ViT-style patch embedding (kernel = stride =
    16, sides not multiples of 16), stride 2 with dilation 2 and padding, dilation 3 without bias."""
    torch.manual_seed(13)
    patch = torch.nn.Conv2d(3, 24, kernel_size=16, stride=16)
    dilated = torch.nn.Conv2d(4, 6, kernel_size=3, stride=2, padding=2, dilation=2)
    dilated3 = torch.nn.Conv2d(4, 5, kernel_size=3, dilation=3, bias=False)
    image = torch.randn(2, 3, 48, 40)
    x = torch.randn(2, 4, 19, 23)
    with torch.no_grad():
        tensors = {"image": image, "x": x, "patch.output": patch(image), "dilated.output": dilated(x),
                   "dilated3.output": dilated3(x)}
    tensors.update(_prefixed("patch.", patch))
    tensors.update(_prefixed("dilated.", dilated))
    tensors.update(_prefixed("dilated3.", dilated3))
    save("conv2d_strided", tensors, {"torch": torch.__version__})


@fixture
def vision_transformer():
    """torchvision.models.VisionTransformer (28 x 28 images, 4 x 4 patches, 3 blocks of width 48,
    3 heads) with random weights (the zero-initialized class token and head randomized too):
    logits and each block's per-head attention weights in float; the logits of the model and
    images rounded to bfloat16, run by PyTorch in bfloat16 and in float64 (the value heed's
    bfloat16 model approaches: it rounds less often than PyTorch)."""
    from torchvision.models import VisionTransformer
    torch.manual_seed(17)
    model = VisionTransformer(image_size=28, patch_size=4, num_layers=3, num_heads=3, hidden_dim=48, mlp_dim=96,
                              num_classes=10).eval()
    with torch.no_grad():
        model.class_token.normal_()
        model.heads.head.weight.normal_(std=0.2)
        model.heads.head.bias.normal_()
        images = torch.randn(2, 3, 28, 28)
        logits, weights = vit_forward_with_weights(model, images)
        assert torch.equal(logits, model(images))
        tensors = {"images": images, "logits": logits}
        tensors.update(_prefixed("model.", model))
        tensors.update({f"weights.{i}": w for i, w in enumerate(weights)})
        images16 = images.bfloat16()
        model16 = model.bfloat16()
        tensors["logits_bf16"] = model16(images16)
        tensors["logits_bf16_in_f64"] = model16.double()(images16.double())
    save("vision_transformer", tensors, {"torch": torch.__version__})


def main(names):
    torch.set_num_threads(1)  # one thread: the same reduction order, so a rerun writes the same bytes
    for name in names or FIXTURES:
        if name not in FIXTURES:
            sys.exit(f"unknown fixture {name!r}; known: {', '.join(FIXTURES)}")
        FIXTURES[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
