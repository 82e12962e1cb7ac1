"""What the benchmarks share: where the zoo is, which edgeplan to run, which zoo models have free dims."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EDGEPLAN = str(Path(sys.executable).parent / "edgeplan")
# Models with a symbolic batch or sequence dim, and the shape the planner benchmark fixes them to.
DYNAMIC_SHAPES = {"tv_mobilenet_v2_dynbatch": "input=1x3x224x224", "unet_convtranspose_dynbatch": "input=1x3x256x256",
                  "transformer_encoder_dynseq": "input=1x128x256"}


def zoo_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zoo", default=str(REPO.parent / "shared" / "zoo"))
    return parser
