#!/usr/bin/python3
"""Trains the seed's AttentionClassifier (seed 000 §6.1) on six categories of Debian's
`fortunes` package and writes what heed's demo needs to examples/data/:

    fortunes_classifier.safetensors  weights, with the model's options and class names in __metadata__
    fortunes_vocab.txt               one word a line; line i is token id i (0 = <pad>, 1 = <unk>)
    fortunes_test.tsv                the test set: category<TAB>text, one fortune a line
    fortunes_reference.safetensors   PyTorch's token ids, logits and predictions on the test set

Run with Debian's interpreter (PyTorch 1.13) after `apt-get install fortunes python3-torch`:

    /usr/bin/python3 examples/train/train_fortunes.py

The split is fixed (every fifth fortune of a category is a test fortune) and training is
seeded and single-threaded, so a rerun writes the same files.
"""
import collections
import json
import pathlib
import re

import torch

from common import AttentionClassifier, save_safetensors

FORTUNES = pathlib.Path("/usr/share/games/fortunes")
CATEGORIES = ["computers", "people", "politics", "science", "songs-poems", "work"]
OUT = pathlib.Path(__file__).resolve().parent.parent / "data"
MAX_TOKENS = 64
CONFIG = dict(vocab_size=0, embed_dim=64, hidden_dim=128, num_classes=len(CATEGORIES), n_heads=4, num_layers=2)


def tokenize(text):
    """ASCII-lowercased runs of [a-z0-9']; heed's demo tokenizes the same way."""
    lowered = "".join(c.lower() if c.isascii() else " " for c in text)
    return re.findall(r"[a-z0-9']+", lowered)[:MAX_TOKENS]


def read_category(name):
    text = (FORTUNES / name).read_text(encoding="latin-1")
    entries = [" ".join(e.split()) for e in text.split("\n%\n")]
    return [e for e in entries if e and e != "%" and tokenize(e)]


def batches(ids, labels, size, shuffle=False, generator=None):
    order = torch.randperm(len(ids), generator=generator).tolist() if shuffle else range(len(ids))
    order = list(order)
    for i in range(0, len(order), size):
        chosen = order[i:i + size]
        length = max(len(ids[j]) for j in chosen)
        x = torch.zeros(len(chosen), length, dtype=torch.long)
        for row, j in enumerate(chosen):
            x[row, :len(ids[j])] = torch.tensor(ids[j])
        yield x, torch.tensor([labels[j] for j in chosen])


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    train, test = [], []
    for label, name in enumerate(CATEGORIES):
        for i, entry in enumerate(read_category(name)):
            (test if i % 5 == 4 else train).append((entry, label))
    print(f"{len(train)} training and {len(test)} test fortunes in {len(CATEGORIES)} categories")

    counts = collections.Counter(w for text, _ in train for w in tokenize(text))
    words = sorted((w for w, n in counts.items() if n >= 2), key=lambda w: (-counts[w], w))[:6000]
    vocab = ["<pad>", "<unk>"] + words
    index = {w: i for i, w in enumerate(vocab)}
    encode = lambda text: [index.get(w, 1) for w in tokenize(text)]
    CONFIG["vocab_size"] = len(vocab)

    train_ids, train_labels = [encode(t) for t, _ in train], [y for _, y in train]
    test_ids, test_labels = [encode(t) for t, _ in test], [y for _, y in test]

    model = AttentionClassifier(**CONFIG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    generator = torch.Generator().manual_seed(1)
    for epoch in range(12):
        model.train()
        total = 0.0
        for x, y in batches(train_ids, train_labels, 32, shuffle=True, generator=generator):
            optimizer.zero_grad()
            logits, _ = model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
        accuracy = evaluate(model, test_ids, test_labels)[2]
        print(f"epoch {epoch + 1}: loss {total / len(train_ids):.4f}, test accuracy {accuracy:.4f}")

    logits, predictions, accuracy = evaluate(model, test_ids, test_labels)
    print(f"PyTorch test accuracy: {accuracy:.4f}")

    OUT.mkdir(exist_ok=True)
    metadata = {"heed.module": "AttentionClassifier", "heed.config": json.dumps(CONFIG),
                "classes": json.dumps(CATEGORIES), "max_tokens": str(MAX_TOKENS),
                "trained_by": "examples/train/train_fortunes.py", "torch_version": torch.__version__,
                "test_accuracy": f"{accuracy:.6f}"}
    state = {k: v for k, v in model.state_dict().items() if k != "pos_encoding.pe"}  # heed computes the table
    save_safetensors(OUT / "fortunes_classifier.safetensors", state, metadata)
    (OUT / "fortunes_vocab.txt").write_text("\n".join(vocab) + "\n")
    (OUT / "fortunes_test.tsv").write_text("".join(f"{CATEGORIES[y]}\t{t}\n" for t, y in test))
    width = max(len(i) for i in test_ids)
    ids = torch.zeros(len(test_ids), width, dtype=torch.int32)
    for row, seq in enumerate(test_ids):
        ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.int32)
    save_safetensors(OUT / "fortunes_reference.safetensors",
                     {"ids": ids, "labels": torch.tensor(test_labels), "logits": logits,
                      "predictions": predictions}, {"test_accuracy": f"{accuracy:.6f}"})


@torch.no_grad()
def evaluate(model, ids, labels):
    model.eval()
    logits = torch.cat([model(x)[0] for x, _ in batches(ids, labels, 64)])
    predictions = logits.argmax(1)
    accuracy = (predictions == torch.tensor(labels)).float().mean().item()
    return logits, predictions, accuracy


if __name__ == "__main__":
    main()
