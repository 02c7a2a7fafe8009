#!/usr/bin/python3
"""Trains torchvision's VisionTransformer on scikit-learn's digits, upscaled to 28x28 and cut into
2x2 patches (a 14x14 grid, as in seed 002's [CLS] heatmap), and writes what heed's demo needs to
examples/data/:

    digits_vit.safetensors            weights (torchvision's names), options in __metadata__
    digits_vit_reference.safetensors  the 8x8 test images, labels, PyTorch's logits and
                                      predictions, and for the first 8 test digits the last
                                      block's [CLS]-to-patch attention (mean over heads) and the
                                      attention rollout (Abnar & Zuidema 2020), each [8, 14, 14]

Run with Debian's interpreter after
`apt-get install python3-torch python3-torchvision python3-sklearn`:

    /usr/bin/python3 examples/train/train_vit.py

The data is read from the CSV that python3-sklearn ships (scikit-learn itself is not imported);
the split is train_digits.py's. The 28x28 images are made by `upscale` below, which heed's demo
(examples/demo_vit.cpp) computes the same way, so only the 8x8 digits are stored.
Training is seeded and runs on two threads (about ten minutes: PyTorch 1.13's bmm on 197 tokens
of head width 16 is most of it).
"""
import gzip
import json
import pathlib

import torch
from torchvision.models import VisionTransformer

from common import save_safetensors, vit_forward_with_weights

DIGITS = pathlib.Path("/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz")
OUT = pathlib.Path(__file__).resolve().parent.parent / "data"
CONFIG = dict(image_size=28, patch_size=2, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=10)
SHOWN = 8


def upscale(images, size=28):
    """[N, 8, 8] -> [N, 3, size, size]: bilinear with half-pixel centres (align_corners=False), in
    float64, then float32, the grey value in all three channels. examples/demo_vit.cpp repeats it."""
    n, h, w = images.shape
    out = torch.empty(n, size, size, dtype=torch.float64)
    x = images.double()
    for oy in range(size):
        sy = max((oy + 0.5) * h / size - 0.5, 0.0)
        y0 = int(sy)
        y1, wy = min(y0 + 1, h - 1), sy - y0
        for ox in range(size):
            sx = max((ox + 0.5) * w / size - 0.5, 0.0)
            x0 = int(sx)
            x1, wx = min(x0 + 1, w - 1), sx - x0
            top = (1 - wx) * x[:, y0, x0] + wx * x[:, y0, x1]
            bottom = (1 - wx) * x[:, y1, x0] + wx * x[:, y1, x1]
            out[:, oy, ox] = (1 - wy) * top + wy * bottom
    return out.float().unsqueeze(1).expand(n, 3, size, size).contiguous()


def cls_maps(weights, side):
    """The last block's [CLS] row over the patches (mean over heads), and the rollout: per block
    the head mean plus the identity, rows renormalized, multiplied from the first block up; its
    [CLS] row over the patches. In float64."""
    last = weights[-1].double().mean(1)[:, 0, 1:]
    rollout = None
    for w in weights:
        a = w.double().mean(1)
        a = 0.5 * a + 0.5 * torch.eye(a.shape[-1], dtype=torch.float64)
        a = a / a.sum(-1, keepdim=True)
        rollout = a if rollout is None else a @ rollout
    return last.reshape(-1, side, side), rollout[:, 0, 1:].reshape(-1, side, side)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(2)
    rows = [line.split(",") for line in gzip.open(DIGITS, "rt").read().split("\n") if line.strip()]
    digits = torch.tensor([[float(v) for v in r[:64]] for r in rows]).view(-1, 8, 8) / 16.0
    labels = torch.tensor([int(float(r[64])) for r in rows])
    test = torch.zeros(len(rows), dtype=torch.bool)
    test[torch.randperm(len(rows), generator=torch.Generator().manual_seed(2))[:len(rows) // 5]] = True
    images = upscale(digits)
    x_train, y_train, x_test, y_test = images[~test], labels[~test], images[test], labels[test]
    print(f"{len(x_train)} training and {len(x_test)} test digits, {tuple(images.shape[1:])} each")

    model = VisionTransformer(**CONFIG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    generator = torch.Generator().manual_seed(1)
    epochs = 20
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=epochs * ((len(x_train) + 63) // 64))
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x_train), generator=generator)
        for i in range(0, len(order), 64):
            chosen = order[i:i + 64]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x_train[chosen]), y_train[chosen])
            loss.backward()
            optimizer.step()
            scheduler.step()
        if (epoch + 1) % 5 == 0:
            with torch.no_grad():
                model.eval()
                accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {accuracy:.4f}", flush=True)

    model.eval()
    with torch.no_grad():
        logits = model(x_test)
        last, rollout = cls_maps(vit_forward_with_weights(model, x_test[:SHOWN])[1], CONFIG["image_size"] // CONFIG["patch_size"])
    predictions = logits.argmax(1)
    accuracy = (predictions == y_test).float().mean().item()
    print(f"PyTorch test accuracy: {accuracy:.4f}")

    OUT.mkdir(exist_ok=True)
    metadata = {"heed.module": "VisionTransformer", "heed.config": json.dumps(CONFIG),
                "trained_by": "examples/train/train_vit.py", "torch_version": torch.__version__,
                "test_accuracy": f"{accuracy:.6f}"}
    save_safetensors(OUT / "digits_vit.safetensors", model.state_dict(), metadata)
    save_safetensors(OUT / "digits_vit_reference.safetensors",
                     {"digits": digits[test], "labels": y_test, "logits": logits, "predictions": predictions,
                      "cls_attention": last, "rollout": rollout}, {"test_accuracy": f"{accuracy:.6f}"})


if __name__ == "__main__":
    main()
