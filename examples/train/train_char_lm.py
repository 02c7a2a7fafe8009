#!/usr/bin/python3
"""Trains a small character-level language model in the Llama layout on Debian's `fortunes`
and writes what heed's generation demo (examples/demo_generate.cpp) needs to examples/data/:

    char_lm.safetensors            the weights (bfloat16), with every option and the vocabulary
                                   in __metadata__, under the Hugging Face Llama names
    char_lm_reference.safetensors  PyTorch's greedy continuations of 20 held-out prompts, the
                                   top-2 logit margin at every step, and the held-out loss
    char_lm_train.log              this script's output

The model: token embedding; 4 blocks of [RMSNorm -> attention (8 query heads over 2 key/value
heads, rotary positions as Llama's rotate_half) -> residual -> RMSNorm -> SwiGLU -> residual];
RMSNorm; output projection. 2.67 M parameters, 5.3 MB in bfloat16.

Corpus: every file of Debian's `fortunes` and `fortunes-min` packages except ascii-art (drawings,
not text): 2.5 MB of English quotations, jokes and verse, the text Debian ships for exactly this
kind of toy, and the corpus heed's classifier demo already uses. Every 20th fortune is held out.

Run with Debian's interpreter (PyTorch 1.13) after `apt-get install fortunes python3-torch`:

    /usr/bin/python3 examples/train/train_char_lm.py           # train, write the three files
    /usr/bin/python3 examples/train/train_char_lm.py --speed   # PyTorch's tokens/s with its cache

Training is seeded and single-threaded (two threads were slower on the machine it was made
on), so a rerun writes the same files, log aside: its 1308 s include a build that shared the
core during the first 40 steps; alone a step takes 2.15-2.2 s, 20.5 minutes in all. The weights
are rounded to bfloat16 once, and every reference figure is computed in float32 from the
rounded weights: what heed loads.
"""
import argparse
import json
import math
import pathlib
import struct
import sys
import time

import torch
import torch.nn.functional as F

from common import save_safetensors

FORTUNES = pathlib.Path("/usr/share/games/fortunes")
OUT = pathlib.Path(__file__).resolve().parent.parent / "data"
CONFIG = dict(dim=256, layers=4, heads=8, kv_heads=2, ffn_hidden=640, rope_theta=10000.0,
              rms_norm_eps=1e-5, context_length=2048)
TRAIN = dict(steps=560, batch=16, window=256, lr=3e-3, min_lr=3e-4, warmup=30, weight_decay=0.1, seed=0)
PROMPTS, GENERATE, EVAL_WINDOWS = 20, 200, 32
# Printable ASCII and the newline: the vocabulary, in id order. Other characters are dropped
# from the corpus (tabs become spaces).
VOCAB = "\n" + "".join(chr(c) for c in range(32, 127))


def read_corpus():
    """The fortunes as one string each, cleaned to VOCAB; (training, held-out) lists."""
    files = sorted(p for p in FORTUNES.iterdir()
                   if p.is_file() and not p.is_symlink() and "." not in p.name and p.name != "ascii-art")
    fortunes = []
    for path in files:
        for entry in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            text = "".join(c for c in entry.replace("\t", " ") if c in VOCAB).strip("\n%")
            if len(text) >= 16:
                fortunes.append(text)
    train = [f for i, f in enumerate(fortunes) if i % 20 != 19]
    held_out = [f for i, f in enumerate(fortunes) if i % 20 == 19]
    return train, held_out, [p.name for p in files]


def encode(text):
    return [VOCAB.index(c) for c in text]


def joined(fortunes):
    """The fortune file format: every fortune followed by a line holding '%'."""
    return "".join(f + "\n%\n" for f in fortunes)


class RMSNorm(torch.nn.Module):
    """torch 2.4's nn.RMSNorm (PyTorch 1.13 has none): y = x / sqrt(mean(x^2) + eps) * weight."""
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Attention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h, self.hkv, self.hd = c["heads"], c["kv_heads"], c["dim"] // c["heads"]
        self.q_proj = torch.nn.Linear(c["dim"], self.h * self.hd, bias=False)
        self.k_proj = torch.nn.Linear(c["dim"], self.hkv * self.hd, bias=False)
        self.v_proj = torch.nn.Linear(c["dim"], self.hkv * self.hd, bias=False)
        self.o_proj = torch.nn.Linear(self.h * self.hd, c["dim"], bias=False)

    def forward(self, x, cos, sin, start, cache):
        """x [B, T, E] at positions start .. start + T; cache: None or (k, v) [B, Hkv, capacity, hd]."""
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.hkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.hkv, self.hd).transpose(1, 2)
        c, s = cos[start:start + T], sin[start:start + T]
        q, k = q * c + rotate_half(q) * s, k * c + rotate_half(k) * s
        if cache is not None:
            cache[0][:, :, start:start + T] = k
            cache[1][:, :, start:start + T] = v
            k, v = cache[0][:, :, :start + T], cache[1][:, :, :start + T]
        group = self.h // self.hkv
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        if T > 1:
            blocked = torch.ones(T, start + T, dtype=torch.bool).triu(start + 1)
            scores = scores.masked_fill(blocked, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.h * self.hd))


class SwiGLU(torch.nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.up_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.down_proj = torch.nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["dim"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["dim"], c["rms_norm_eps"])
        self.mlp = SwiGLU(c["dim"], c["ffn_hidden"])

    def forward(self, x, cos, sin, start, cache):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, start, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(c["vocab_size"], c["dim"])
        self.layers = torch.nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["dim"], c["rms_norm_eps"])


class CharLM(torch.nn.Module):
    """The Llama layout, with Hugging Face's state_dict names (model.layers.0.self_attn.q_proj...)."""
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Body(c)
        self.lm_head = torch.nn.Linear(c["dim"], c["vocab_size"], bias=False)
        hd = c["dim"] // c["heads"]
        inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        angles = torch.outer(torch.arange(c["context_length"], dtype=torch.float64), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, ids, start=0, caches=None):
        x = self.model.embed_tokens(ids)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, self.cos, self.sin, start, None if caches is None else caches[i])
        return self.lm_head(self.model.norm(x))

    def make_caches(self, batch, capacity):
        c = self.config
        shape = (batch, c["kv_heads"], capacity, c["dim"] // c["heads"])
        return [(torch.zeros(shape), torch.zeros(shape)) for _ in range(c["layers"])]


@torch.inference_mode()
def greedy(model, prompt, steps):
    """PyTorch's own cache loop: the prompt in one call, then one call per character.
    Returns the generated ids and, per step, the top-1 minus top-2 logit."""
    caches = model.make_caches(1, len(prompt) + steps)
    logits = model(torch.tensor([prompt]), 0, caches)[0, -1]
    out, margins, position = [], [], len(prompt)
    for _ in range(steps):
        top = torch.topk(logits, 2).values
        margins.append(float(top[0] - top[1]))
        token = int(torch.argmax(logits))
        out.append(token)
        logits = model(torch.tensor([[token]]), position, caches)[0, -1]
        position += 1
    return out, margins


def windows(ids, count, width):
    """count non-overlapping windows of width + 1 ids (input and shifted target)."""
    return torch.tensor([ids[i * width:i * width + width + 1] for i in range(count)])


def save_weights(tensors, c):
    """char_lm.safetensors: the options and the vocabulary as heed's modules keep them in
    __metadata__ ("heed.module", "heed.config": a JSON object; nn/config.hpp)."""
    metadata = {"heed.module": "CharLM", "heed.config": json.dumps(dict(c, vocab=VOCAB)),
                "corpus": "Debian fortunes and fortunes-min, ascii-art excluded; every 20th fortune held out"}
    save_safetensors(OUT / "char_lm.safetensors", tensors, metadata)


def load_rounded(path):
    """The committed model: bfloat16 weights as float32, options from __metadata__."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    c = json.loads(header.pop("__metadata__")["heed.config"])
    del c["vocab"]
    model = CharLM(c)
    state = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        data = bytearray(raw[8 + n + begin:8 + n + end])
        state[name] = torch.frombuffer(data, dtype=torch.bfloat16).view(info["shape"]).float()
    model.load_state_dict(state)
    return model.eval()


def train(log):
    torch.manual_seed(TRAIN["seed"])
    torch.set_num_threads(1)
    train_fortunes, held_out, files = read_corpus()
    train_ids, held_ids = encode(joined(train_fortunes)), encode(joined(held_out))
    log(f"corpus: {len(files)} files of /usr/share/games/fortunes ({', '.join(files)})")
    log(f"{len(train_fortunes)} training fortunes ({len(train_ids)} characters), "
        f"{len(held_out)} held out ({len(held_ids)} characters); vocabulary {len(VOCAB)} characters")
    c = dict(CONFIG, vocab_size=len(VOCAB))
    model = CharLM(c)
    log(f"model: {c}; {sum(p.numel() for p in model.parameters())} parameters; training: {TRAIN}")

    decay = [p for p in model.parameters() if p.dim() == 2]
    other = [p for p in model.parameters() if p.dim() != 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": TRAIN["weight_decay"]},
                                   {"params": other, "weight_decay": 0.0}], lr=TRAIN["lr"], betas=(0.9, 0.95))
    generator = torch.Generator().manual_seed(TRAIN["seed"] + 1)
    data, width = torch.tensor(train_ids), TRAIN["window"]
    evaluation = windows(held_ids, EVAL_WINDOWS, width)
    began = time.time()
    for step in range(1, TRAIN["steps"] + 1):
        progress = max(0.0, (step - TRAIN["warmup"]) / (TRAIN["steps"] - TRAIN["warmup"]))
        lr = TRAIN["lr"] * min(1.0, step / TRAIN["warmup"])
        lr = TRAIN["min_lr"] + (lr - TRAIN["min_lr"]) * 0.5 * (1 + math.cos(math.pi * progress))
        for group in optimizer.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, len(data) - width - 1, (TRAIN["batch"],), generator=generator)
        batch = torch.stack([data[s:s + width + 1] for s in starts.tolist()])
        model.train()
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, len(VOCAB)), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 40 == 0 or step == TRAIN["steps"]:
            model.eval()
            with torch.inference_mode():
                held = F.cross_entropy(model(evaluation[:, :-1]).reshape(-1, len(VOCAB)),
                                       evaluation[:, 1:].reshape(-1))
            log(f"step {step:4d}  lr {lr:.2e}  train loss {loss.item():.4f}  held-out loss {held.item():.4f}"
                f"  ({time.time() - began:.0f} s)")

    tensors = {name: t.detach().to(torch.bfloat16) for name, t in model.state_dict().items()}
    save_weights(tensors, c)
    return held_out, held_ids


def references(held_out, held_ids, log):
    torch.set_num_threads(1)
    model = load_rounded(OUT / "char_lm.safetensors")
    # Prompts: the start of 20 held-out fortunes spread over the set, cut after a word, 12-40 characters.
    chosen = [held_out[i * len(held_out) // PROMPTS] for i in range(PROMPTS)]
    prompts = []
    for text in chosen:
        cut = text[:40]
        space = cut.rfind(" ", 12)
        prompts.append(cut[:space + 1] if space > 0 else cut)
    width = TRAIN["window"]
    longest = max(len(p) for p in prompts)
    prompt_ids = torch.full((PROMPTS, longest), -1, dtype=torch.int64)
    generated = torch.zeros(PROMPTS, GENERATE, dtype=torch.int64)
    margins = torch.zeros(PROMPTS, GENERATE, dtype=torch.float32)
    for i, p in enumerate(prompts):
        ids = encode(p)
        prompt_ids[i, :len(ids)] = torch.tensor(ids)
        out, m = greedy(model, ids, GENERATE)
        generated[i], margins[i] = torch.tensor(out), torch.tensor(m)
        log(f"prompt {i:2d}: {p!r} -> {''.join(VOCAB[t] for t in out)[:60]!r}...  smallest margin {min(m):.2e}")
    evaluation = windows(held_ids, EVAL_WINDOWS, width)
    with torch.inference_mode():
        logits = model(evaluation[:, :-1])
        losses = F.cross_entropy(logits.reshape(-1, len(VOCAB)), evaluation[:, 1:].reshape(-1), reduction="none")
    window_loss = losses.view(EVAL_WINDOWS, width).double().sum(-1)
    mean = float(window_loss.sum() / (EVAL_WINDOWS * width))
    log(f"held-out loss over {EVAL_WINDOWS} x {width} characters: {mean:.6f} nats/char (perplexity {math.exp(mean):.4f})")
    save_safetensors(OUT / "char_lm_reference.safetensors", {
        "prompt_ids": prompt_ids, "generated": generated, "margins": margins,
        "eval_ids": evaluation, "eval_window_loss": window_loss, "eval_logits_0": logits[0].contiguous()},
        {"prompts": len(prompts), "generate": GENERATE, "eval_windows": EVAL_WINDOWS, "window": width})


@torch.inference_mode()
def speed(log):
    """Tokens/s of greedy generation with the cache loop above, one core and two."""
    model = load_rounded(OUT / "char_lm.safetensors")
    prompt = encode("The best way to predict the future is ")
    results = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for cached in (len(prompt), 1024):
            ids = (prompt * (cached // len(prompt) + 1))[:cached]
            steps, best = 128, float("inf")
            for _ in range(3):
                caches = model.make_caches(1, cached + steps + 1)
                logits = model(torch.tensor([ids]), 0, caches)[0, -1]
                began = time.perf_counter()
                for s in range(steps):
                    token = int(torch.argmax(logits))
                    logits = model(torch.tensor([[token]]), cached + s, caches)[0, -1]
                best = min(best, time.perf_counter() - began)
            results.append((threads, cached, steps / best))
            log(f"PyTorch {torch.__version__}, {threads} thread(s), {cached} cached: "
                f"{steps / best:.1f} tokens/s ({1e3 * best / steps:.3f} ms/step, best of 3 x {steps} steps)")
    lines = [f"{t} {c} {r:.2f}" for t, c, r in results]
    (OUT / "char_lm_pytorch_speed.txt").write_text(
        f"# tokens/s of PyTorch {torch.__version__} greedy generation with its cache loop "
        "(examples/train/train_char_lm.py --speed): threads, cached tokens, tokens/s\n" + "\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--speed", action="store_true", help="only measure PyTorch's generation speed")
    args = parser.parse_args()
    if args.speed:
        speed(print)
        return
    log_file = (OUT / "char_lm_train.log").open("w")

    def log(line):
        print(line)
        print(line, file=log_file, flush=True)

    log(f"PyTorch {torch.__version__}, Python {sys.version.split()[0]}")
    held_out, held_ids = train(log)
    references(held_out, held_ids, log)


if __name__ == "__main__":
    main()
