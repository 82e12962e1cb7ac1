"""Builds the structure-only ONNX files of HaX-CoNN's network pairs that the corpus lacks (torchvision
definitions, weights=None, fixed seeds), with tools/build_corpus.py's exporter and stripper.

    nice -n 10 /work/corpus-venv/bin/python benchmarks/multi_dnn_models/build.py [--build-dir /tmp/hax]

GoogLeNet and AlexNet are corpus/models/tv_googlenet.onnx and tv_alexnet.onnx; Inception is
corpus/models/timm_inception_v3.onnx (HaX-CoNN's Inception is v3-style at 299x299).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from tools.build_corpus import _export, _tv, strip  # noqa: E402

NETWORKS = (("tv_resnet101", "resnet101"), ("tv_resnet152", "resnet152"), ("tv_vgg19", "vgg19"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="/tmp/edgeplan-multi-dnn")
    args = parser.parse_args()
    build = Path(args.build_dir)
    build.mkdir(parents=True, exist_ok=True)
    for name, fn in NETWORKS:
        out = HERE / f"{name}.onnx"
        if out.exists():
            continue
        weighted = build / f"{name}.onnx"
        _export(_tv(name, "classification/cnn", fn), weighted)
        nodes, note = strip(weighted, out)
        print(f"{name}: {nodes} nodes, {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
