#!/usr/bin/python3
"""Trains a small CNN with the seed's CBAM (seed 000 §4.3) on scikit-learn's digits (8x8
grey images, 10 classes) and writes what heed's demo needs to examples/data/:

    digits_cbam.safetensors       weights, with the model's options in __metadata__
    digits_reference.safetensors  the test images, labels, PyTorch's logits, predictions and
                                  CBAM spatial-attention maps

Run with Debian's interpreter after `apt-get install python3-torch python3-sklearn`:

    /usr/bin/python3 examples/train/train_digits.py

The data is read from the CSV that python3-sklearn ships, so scikit-learn itself is not imported.
The split is fixed (a seeded random fifth of the images is the test set) and training is seeded.
"""
import gzip
import json
import pathlib

import torch

from common import CBAM, save_safetensors

DIGITS = pathlib.Path("/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz")
OUT = pathlib.Path(__file__).resolve().parent.parent / "data"
CONFIG = dict(channels1=16, channels2=32, reduction=4, kernel_size=7, num_classes=10)


class DigitsCBAM(torch.nn.Module):
    """conv 3x3 → ReLU → CBAM → conv 3x3 → ReLU → global average pool → linear."""
    def __init__(self, channels1, channels2, reduction, kernel_size, num_classes):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, channels1, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(channels1, channels2, 3, padding=1)
        self.cbam = CBAM(channels1, reduction, kernel_size)
        self.fc = torch.nn.Linear(channels2, num_classes)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x, _, spatial = self.cbam(x)
        x = torch.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3))), spatial


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rows = [line.split(",") for line in gzip.open(DIGITS, "rt").read().split("\n") if line.strip()]
    images = torch.tensor([[float(v) for v in r[:64]] for r in rows]).view(-1, 1, 8, 8) / 16.0
    labels = torch.tensor([int(float(r[64])) for r in rows])
    test = torch.zeros(len(rows), dtype=torch.bool)
    test[torch.randperm(len(rows), generator=torch.Generator().manual_seed(2))[:len(rows) // 5]] = True
    x_train, y_train, x_test, y_test = images[~test], labels[~test], images[test], labels[test]
    print(f"{len(x_train)} training and {len(x_test)} test digits")

    model = DigitsCBAM(**CONFIG)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(1)
    for epoch in range(80):
        model.train()
        order = torch.randperm(len(x_train), generator=generator)
        for i in range(0, len(order), 32):
            chosen = order[i:i + 32]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x_train[chosen])[0], y_train[chosen])
            loss.backward()
            optimizer.step()
        if (epoch + 1) % 10 == 0:
            with torch.no_grad():
                model.eval()
                accuracy = (model(x_test)[0].argmax(1) == y_test).float().mean().item()
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {accuracy:.4f}")

    model.eval()
    with torch.no_grad():
        logits, spatial = model(x_test)
    predictions = logits.argmax(1)
    accuracy = (predictions == y_test).float().mean().item()
    print(f"PyTorch test accuracy: {accuracy:.4f}; spatial maps in [{spatial.min():.4f}, {spatial.max():.4f}]")

    OUT.mkdir(exist_ok=True)
    metadata = {"heed.module": "DigitsCBAM", "heed.config": json.dumps(CONFIG),
                "trained_by": "examples/train/train_digits.py", "torch_version": torch.__version__,
                "test_accuracy": f"{accuracy:.6f}"}
    save_safetensors(OUT / "digits_cbam.safetensors", model.state_dict(), metadata)
    save_safetensors(OUT / "digits_reference.safetensors",
                     {"images": x_test, "labels": y_test, "logits": logits, "predictions": predictions,
                      "spatial_maps": spatial}, {"test_accuracy": f"{accuracy:.6f}"})


if __name__ == "__main__":
    main()
