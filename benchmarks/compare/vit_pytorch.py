#!/usr/bin/python3
"""torchvision's vit_b_16 (random weights, eval, no grad) timed the way benchmarks/nn/bench_vision.cpp
times heed's ViT-B/16 (BM_vision_transformer): images/s at batch 1 and 8, medians of repeated runs.

    OMP_NUM_THREADS=1 taskset -c 1 /usr/bin/python3 benchmarks/compare/vit_pytorch.py [threads]

Needs `apt-get install python3-torch python3-torchvision`.
"""
import statistics
import sys
import time

import torch
from torchvision.models import vit_b_16


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    torch.set_num_threads(threads)
    model = vit_b_16().eval()
    for dtype in (torch.float32, torch.bfloat16):
        model = model.to(dtype)
        for batch in (1, 8) if dtype == torch.float32 else (1,):
            images = torch.randn(batch, 3, 224, 224).to(dtype)
            with torch.no_grad():
                model(images)  # warm-up
                times = []
                for _ in range(5 if batch == 1 else 3):
                    start = time.perf_counter()
                    model(images)
                    times.append(time.perf_counter() - start)
            t = statistics.median(times)
            print(f"torch {torch.__version__} vit_b_16 {str(dtype)[6:]} threads {threads} batch {batch}: "
                  f"{t * 1e3:.1f} ms, {batch / t:.2f} images/s")


if __name__ == "__main__":
    main()
