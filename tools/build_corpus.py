"""Build the real-architecture corpus: ONNX exports of random-initialised models, no weights downloaded.

Run with the corpus venv (torch 2.14.1, torchvision 0.29.1, timm, ultralytics, transformers 5.25.0, onnx, onnxscript;
wave 7 also needs segmentation-models-pytorch, monai, kornia and scipy, wave 8 diffusers, wave 9 spandrel, wave 10
torchaudio (2.11.0 with --no-deps: no release matches torch 2.14), torch_geometric, nnAudio, pytorch-tabnet, snntorch and
open_clip_torch), not edgeplan's (with HF_HUB_OFFLINE=1 as a guard; nothing is fetched):
    nice -n 10 /work/corpus-venv/bin/python tools/build_corpus.py --build-dir /work/corpus-build [--only NAME,...]
    .venv/bin/python tools/build_corpus.py --verify        # edgeplan's venv: fills the edgeplan_load column

Every model comes from an architecture definition (torchvision `weights=None`, timm `pretrained=False`,
ultralytics from its yaml, transformers from its config classes, plain torch.nn modules) with fixed seeds,
batch 1 and static input shapes.
The weighted file goes to BUILD_DIR/models/ (for rknn-toolkit2, which needs real tensors); the repository
keeps a structure-only copy in corpus/models/: large float initializers point at an external file that
does not exist (as in ../shared/zoo), while integer tensors and small floats stay inline so shape
arithmetic can still be computed. Already-built models are skipped (the manifest is the record).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "corpus"
MANIFEST = CORPUS / "MANIFEST.csv"
COLUMNS = ["name", "architecture", "family", "source", "call", "exporter", "opset", "input_shapes", "num_nodes",
           "sha256_structure", "sha256_weighted", "weighted_bytes", "structure_bytes", "edgeplan_load", "notes"]
INLINE_MAX_FLOATS = 256  # float initializers up to this many elements stay inline (biases, scales)


@dataclass(frozen=True)
class Spec:
    name: str
    family: str
    library: str  # torchvision / timm / ultralytics / transformers / torch
    call: str  # the constructor as written in the manifest
    make: Callable[[], object] = field(compare=False)
    inputs: tuple[tuple[int, ...], ...] = ((1, 3, 224, 224),)
    exporter: str = "torchscript"  # or "dynamo"
    opset: int = 17
    int_inputs: tuple[int, ...] = ()  # per input: 0 = float32 randn, n > 0 = int64 token ids in [0, n)


def _tv(name: str, family: str, fn: str, shape=(1, 3, 224, 224), opset: int = 17, exporter: str = "torchscript",
        **kwargs) -> Spec:
    def make():
        import torchvision

        return getattr(torchvision.models, fn)(weights=None, **kwargs)

    extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    return Spec(name, family, "torchvision", f"torchvision.models.{fn}(weights=None{extra})", make, (shape,),
                exporter, opset)


def _tv_seg(name: str, fn: str, shape=(1, 3, 320, 320), **kwargs) -> Spec:
    def make():
        import torch
        import torchvision

        class Out(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)["out"]

        return Out(getattr(torchvision.models.segmentation, fn)(weights=None, weights_backbone=None, **kwargs))

    return Spec(name, "torchvision/segmentation", "torchvision",
                f"torchvision.models.segmentation.{fn}(weights=None, weights_backbone=None)['out']", make, (shape,))


def _tv_det_backbone(name: str, fn: str, shape=(1, 3, 320, 320)) -> Spec:
    """Detection backbone + FPN (the exportable, static part of torchvision's detectors; heads do NMS)."""
    def make():
        import torch
        import torchvision

        class Feats(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return tuple(self.inner(x).values())

        det = getattr(torchvision.models.detection, fn)(weights=None, weights_backbone=None)
        return Feats(det.backbone)

    return Spec(name, "torchvision/detection-backbone", "torchvision",
                f"torchvision.models.detection.{fn}(weights=None, weights_backbone=None).backbone", make, (shape,))


def _timm(name: str, family: str, arch: str, shape=(1, 3, 224, 224), opset: int = 17,
          exporter: str = "torchscript", **kwargs) -> Spec:
    def make():
        import timm

        return timm.create_model(arch, pretrained=False, **kwargs)

    extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    return Spec(name, family, "timm", f"timm.create_model({arch!r}, pretrained=False{extra})", make, (shape,),
                exporter, opset)


def _ultralytics(loader: str, yaml: str, head: str, **export_attrs) -> Callable[[], object]:
    """An ultralytics model from its yaml (random init, fused), its head class set to export mode."""
    def make():
        os.environ.setdefault("YOLO_OFFLINE", "1")
        import ultralytics
        from ultralytics.nn.modules import head as heads

        model = getattr(ultralytics, loader)(yaml).model.fuse(verbose=False)
        model.eval()
        for module in model.modules():
            if isinstance(module, getattr(heads, head)):
                for key, value in export_attrs.items():
                    setattr(module, key, value)
        return model

    return make


def _yolo(name: str, yaml: str, family: str, size: int = 320, opset: int = 17) -> Spec:
    make = _ultralytics("YOLO", yaml, "Detect", export=True, format="onnx", dynamic=False)
    return Spec(name, family, "ultralytics",
                f"ultralytics.YOLO({yaml!r}).model.fuse() with the Detect head in export mode", make,
                ((1, 3, size, size),), "torchscript", opset)


def _nn(name: str, family: str, call: str, make: Callable[[], object], inputs, opset: int = 17,
        exporter: str = "torchscript") -> Spec:
    return Spec(name, family, "torch", call, make, tuple(inputs), exporter, opset)


# ---- plain torch.nn blocks ---------------------------------------------------------------------------------

def _lstm(layers: int, hidden: int, bidirectional: bool = False):
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.LSTM(64, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional)
            self.fc = torch.nn.Linear(hidden * (2 if bidirectional else 1), 10)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.fc(y)

    return M()


def _gru(layers: int, hidden: int, bidirectional: bool = False):
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.GRU(64, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional)
            self.fc = torch.nn.Linear(hidden * (2 if bidirectional else 1), 10)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.fc(y)

    return M()


def _encoder(d: int, heads: int, layers: int, norm_first: bool = False, activation: str = "relu"):
    import torch

    layer = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, batch_first=True, dropout=0.0,
                                             norm_first=norm_first, activation=activation)
    return torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).eval()


def _decoder(d: int, heads: int, layers: int):
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layer = torch.nn.TransformerDecoderLayer(d, heads, dim_feedforward=4 * d, batch_first=True, dropout=0.0)
            self.dec = torch.nn.TransformerDecoder(layer, layers)

        def forward(self, tgt, memory):
            return self.dec(tgt, memory)

    return M().eval()


def _mha(d: int, heads: int):
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)

        def forward(self, x):
            return self.attn(x, x, x, need_weights=False)[0]

    return M().eval()


def _sdpa(d: int, heads: int, causal: bool):
    import torch
    import torch.nn.functional as F

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.proj = torch.nn.Linear(d, d)

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return self.proj(y.transpose(1, 2).reshape(b, n, c))

    return M().eval()


def _tf_same_cnn():
    """TensorFlow-style 'same' padding computed from the input size at run time (Shape -> arithmetic -> Pad)."""
    import math

    import torch
    import torch.nn.functional as F

    class SameConv(torch.nn.Conv2d):
        def forward(self, x):
            ih, iw = x.shape[-2:]
            kh, kw = self.kernel_size
            sh, sw = self.stride
            ph = max((math.ceil(ih / sh) - 1) * sh + kh - ih, 0)
            pw = max((math.ceil(iw / sw) - 1) * sw + kw - iw, 0)
            x = F.pad(x, [pw // 2, pw - pw // 2, ph // 2, ph - ph // 2])
            return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(
                SameConv(3, 16, 3, 2), torch.nn.ReLU(), SameConv(16, 32, 3, 2), torch.nn.ReLU(),
                SameConv(32, 32, 5, 2, groups=32), torch.nn.ReLU(), SameConv(32, 64, 3, 2), torch.nn.ReLU())
            self.fc = torch.nn.Linear(64, 10)

        def forward(self, x):
            return self.fc(self.body(x).mean((2, 3)))

    return M().eval()


def _window_attention(window: int = 7, shift: int = 3, dim: int = 64, heads: int = 4, size: int = 30):
    """Swin-style block: pad to a multiple of the window, cyclic roll, window partition, attention, reverse."""
    import torch
    import torch.nn.functional as F

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Conv2d(3, dim, 4, 4)
            self.norm = torch.nn.LayerNorm(dim)
            self.qkv = torch.nn.Linear(dim, 3 * dim)
            self.proj = torch.nn.Linear(dim, dim)

        def forward(self, x):
            x = self.embed(x).permute(0, 2, 3, 1)
            b, h, w, c = x.shape
            x = self.norm(x)
            pad_b = (window - h % window) % window
            pad_r = (window - w % window) % window
            x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
            hp, wp = x.shape[1], x.shape[2]
            x = torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))
            x = x.view(b, hp // window, window, wp // window, window, c).permute(0, 1, 3, 2, 4, 5)
            x = x.reshape(-1, window * window, c)
            n = x.shape[1]
            q, k, v = self.qkv(x).reshape(-1, n, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            a = (q @ k.transpose(-2, -1)) * (c // heads) ** -0.5
            x = (a.softmax(-1) @ v).transpose(1, 2).reshape(-1, n, c)
            x = self.proj(x).view(b, hp // window, wp // window, window, window, c)
            x = x.permute(0, 1, 3, 2, 4, 5).reshape(b, hp, wp, c)
            x = torch.roll(x, shifts=(shift, shift), dims=(1, 2))[:, :h, :w, :]
            return x.permute(0, 3, 1, 2)

    return M().eval()


def _unet_small():
    import torch

    def block(i, o):
        return torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU(),
                                   torch.nn.Conv2d(o, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU())

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2, self.d3 = block(3, 16), block(16, 32), block(32, 64)
            self.up2 = torch.nn.ConvTranspose2d(64, 32, 2, 2)
            self.u2 = block(64, 32)
            self.up1 = torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.u1 = block(48, 16)
            self.head = torch.nn.Conv2d(16, 2, 1)
            self.pool = torch.nn.MaxPool2d(2)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(self.pool(a))
            c = self.d3(self.pool(b))
            b = self.u2(torch.cat([self.up2(c), b], 1))
            return self.head(self.u1(torch.cat([self.up1(b), a], 1)))

    return M().eval()


def _conv1d_tcn():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layers = []
            for i, dil in enumerate([1, 2, 4, 8]):
                layers += [torch.nn.Conv1d(32 if i else 16, 32, 3, padding=dil, dilation=dil), torch.nn.GELU()]
            self.body = torch.nn.Sequential(*layers)
            self.head = torch.nn.Conv1d(32, 4, 1)

        def forward(self, x):
            return self.head(self.body(x))

    return M().eval()


def _mlp_mixer_block():
    import torch

    class M(torch.nn.Module):
        def __init__(self, tokens=64, dim=128):
            super().__init__()
            self.n1, self.n2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
            self.tok = torch.nn.Sequential(torch.nn.Linear(tokens, 256), torch.nn.GELU(), torch.nn.Linear(256, tokens))
            self.ch = torch.nn.Sequential(torch.nn.Linear(dim, 512), torch.nn.GELU(), torch.nn.Linear(512, dim))

        def forward(self, x):
            x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
            return x + self.ch(self.n2(x))

    return M().eval()


def _gelu_tanh_ffn():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(128, 512), torch.nn.Linear(512, 128)
            self.norm = torch.nn.RMSNorm(128) if hasattr(torch.nn, "RMSNorm") else torch.nn.LayerNorm(128)

        def forward(self, x):
            return x + self.b(torch.nn.functional.gelu(self.a(self.norm(x)), approximate="tanh"))

    return M().eval()


def _se_resblock_mish():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 32, 3, 2, 1)
            self.c1, self.c2 = torch.nn.Conv2d(32, 32, 3, 1, 1), torch.nn.Conv2d(32, 32, 3, 1, 1)
            self.se1, self.se2 = torch.nn.Conv2d(32, 8, 1), torch.nn.Conv2d(8, 32, 1)
            self.gn = torch.nn.GroupNorm(4, 32)

        def forward(self, x):
            x = torch.nn.functional.mish(self.stem(x))
            y = self.c2(torch.nn.functional.mish(self.gn(self.c1(x))))
            s = torch.sigmoid(self.se2(torch.relu(self.se1(y.mean((2, 3), keepdim=True)))))
            return torch.nn.functional.mish(x + y * s)

    return M().eval()


def _pixel_shuffle_sr():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 5, padding=2), torch.nn.PReLU(32),
                                            torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.PReLU(32),
                                            torch.nn.Conv2d(32, 3 * 16, 3, padding=1), torch.nn.PixelShuffle(4))

        def forward(self, x):
            return self.body(x)

    return M().eval()


def specs() -> Iterator[Spec]:
    """The corpus, in build order: whole families at a time."""
    cls = "torchvision/classification"
    yield _tv("tv_resnet18", cls, "resnet18")
    yield _tv("tv_resnet34", cls, "resnet34")
    yield _tv("tv_resnet50", cls, "resnet50")
    yield _tv("tv_resnext50_32x4d", cls, "resnext50_32x4d")
    yield _tv("tv_mobilenet_v2", cls, "mobilenet_v2")
    yield _tv("tv_mobilenet_v3_small", cls, "mobilenet_v3_small")
    yield _tv("tv_mobilenet_v3_large", cls, "mobilenet_v3_large")
    yield _tv("tv_squeezenet1_0", cls, "squeezenet1_0")
    yield _tv("tv_squeezenet1_1", cls, "squeezenet1_1")
    yield _tv("tv_shufflenet_v2_x0_5", cls, "shufflenet_v2_x0_5")
    yield _tv("tv_shufflenet_v2_x1_0", cls, "shufflenet_v2_x1_0")
    yield _tv("tv_mnasnet0_5", cls, "mnasnet0_5")
    yield _tv("tv_mnasnet1_0", cls, "mnasnet1_0")
    yield _tv("tv_efficientnet_b0", cls, "efficientnet_b0")
    yield _tv("tv_efficientnet_b1", cls, "efficientnet_b1", shape=(1, 3, 240, 240))
    yield _tv("tv_regnet_x_400mf", cls, "regnet_x_400mf")
    yield _tv("tv_regnet_y_400mf", cls, "regnet_y_400mf")
    yield _tv("tv_googlenet", cls, "googlenet", init_weights=True, aux_logits=False)
    yield _tv("tv_densenet121", cls, "densenet121")
    yield _tv("tv_alexnet", cls, "alexnet")
    yield _tv("tv_convnext_tiny", cls, "convnext_tiny")
    yield _tv("tv_swin_t", cls, "swin_t")
    yield _tv("tv_resnet18_opset11", cls, "resnet18", opset=11)
    yield _tv("tv_mobilenet_v2_opset13", cls, "mobilenet_v2", opset=13)

    vit, cnn, hyb = "timm/vit", "timm/cnn", "timm/hybrid"
    yield _timm("timm_deit_tiny_patch16_224", vit, "deit_tiny_patch16_224")
    yield _timm("timm_vit_tiny_patch16_224", vit, "vit_tiny_patch16_224")
    yield _timm("timm_vit_small_patch32_224", vit, "vit_small_patch32_224")
    yield _timm("timm_swin_tiny_patch4_window7_224", vit, "swin_tiny_patch4_window7_224")
    yield _timm("timm_levit_128s", vit, "levit_128s")
    yield _timm("timm_cait_xxs24_224", vit, "cait_xxs24_224")
    yield _timm("timm_pit_ti_224", vit, "pit_ti_224")
    yield _timm("timm_efficientnet_b0", cnn, "efficientnet_b0")
    yield _timm("timm_mobilenetv3_small_100", cnn, "mobilenetv3_small_100")
    yield _timm("timm_mobilenetv3_large_100", cnn, "mobilenetv3_large_100")
    yield _timm("timm_regnety_002", cnn, "regnety_002")
    yield _timm("timm_resnest14d", cnn, "resnest14d")
    yield _timm("timm_convnext_atto", cnn, "convnext_atto")
    yield _timm("timm_ghostnet_100", cnn, "ghostnet_100")
    yield _timm("timm_tf_efficientnet_b0", cnn, "tf_efficientnet_b0")
    yield _timm("timm_mobilevit_xxs", hyb, "mobilevit_xxs", shape=(1, 3, 256, 256))
    yield _timm("timm_efficientformer_l1", hyb, "efficientformer_l1")
    yield _timm("timm_poolformer_s12", hyb, "poolformer_s12")
    yield _timm("timm_edgenext_xx_small", hyb, "edgenext_xx_small", shape=(1, 3, 256, 256))
    yield _timm("timm_fastvit_t8", hyb, "fastvit_t8", shape=(1, 3, 256, 256))
    yield _timm("timm_coat_lite_tiny", hyb, "coat_lite_tiny")

    det, other = "ultralytics/detect", "ultralytics/seg-pose-obb-cls"
    yield _yolo("yolov5nu_320", "yolov5n.yaml", det)
    yield _yolo("yolov8n_320", "yolov8n.yaml", det)
    yield _yolo("yolov8s_320", "yolov8s.yaml", det)
    yield _yolo("yolov10n_320", "yolov10n.yaml", det)
    yield _yolo("yolo11n_320", "yolo11n.yaml", det)
    yield _yolo("yolo11s_320", "yolo11s.yaml", det)
    yield _yolo("yolov8n_seg_320", "yolov8n-seg.yaml", other)
    yield _yolo("yolov8n_pose_320", "yolov8n-pose.yaml", other)
    yield _yolo("yolov8n_obb_320", "yolov8n-obb.yaml", other)
    yield _yolo("yolov8n_cls_224", "yolov8n-cls.yaml", other, size=224)
    yield _yolo("yolo11n_seg_320", "yolo11n-seg.yaml", other)
    yield _yolo("yolo11n_pose_320", "yolo11n-pose.yaml", other)

    rnn, tfm, pat = "torch.nn/rnn", "torch.nn/transformer", "torch.nn/patterns"
    yield _nn("nn_lstm_1x128", rnn, "LSTM(64, 128, num_layers=1) + Linear", lambda: _lstm(1, 128), [(1, 32, 64)])
    yield _nn("nn_lstm_2x128", rnn, "LSTM(64, 128, num_layers=2) + Linear", lambda: _lstm(2, 128), [(1, 32, 64)])
    yield _nn("nn_bilstm_1x64", rnn, "LSTM(64, 64, bidirectional) + Linear", lambda: _lstm(1, 64, True),
              [(1, 32, 64)])
    yield _nn("nn_gru_1x128", rnn, "GRU(64, 128) + Linear", lambda: _gru(1, 128), [(1, 32, 64)])
    yield _nn("nn_gru_2x64", rnn, "GRU(64, 64, num_layers=2) + Linear", lambda: _gru(2, 64), [(1, 32, 64)])
    yield _nn("nn_bigru_1x64", rnn, "GRU(64, 64, bidirectional) + Linear", lambda: _gru(1, 64, True), [(1, 32, 64)])
    yield _nn("nn_encoder_d128_h4_l2", tfm, "TransformerEncoder(d=128, heads=4, layers=2)",
              lambda: _encoder(128, 4, 2), [(1, 64, 128)])
    yield _nn("nn_encoder_prenorm_gelu_d256_h8_l2", tfm, "TransformerEncoder(d=256, heads=8, norm_first, gelu)",
              lambda: _encoder(256, 8, 2, True, "gelu"), [(1, 49, 256)])
    yield _nn("nn_decoder_d128_h4_l2", tfm, "TransformerDecoder(d=128, heads=4, layers=2)",
              lambda: _decoder(128, 4, 2), [(1, 16, 128), (1, 64, 128)])
    yield _nn("nn_mha_d256_h8", tfm, "MultiheadAttention(256, 8)", lambda: _mha(256, 8), [(1, 100, 256)])
    yield _nn("nn_sdpa_d192_h3", tfm, "qkv Linear + scaled_dot_product_attention", lambda: _sdpa(192, 3, False),
              [(1, 197, 192)])
    yield _nn("nn_sdpa_causal_d128_h4", tfm, "scaled_dot_product_attention(is_causal=True)",
              lambda: _sdpa(128, 4, True), [(1, 64, 128)])
    yield _nn("nn_tf_same_pad_cnn", pat, "Conv2d with TF 'same' padding computed from the input size",
              _tf_same_cnn, [(1, 3, 225, 225)])
    yield _nn("nn_window_attention_pad_roll", pat, "Swin-style window attention with pad + roll",
              _window_attention, [(1, 3, 120, 120)])
    yield _nn("nn_unet_small", pat, "UNet (ConvTranspose + bilinear Upsample)", _unet_small, [(1, 3, 128, 128)])
    yield _nn("nn_tcn_conv1d", pat, "dilated Conv1d stack", _conv1d_tcn, [(1, 16, 256)])
    yield _nn("nn_mlp_mixer_block", pat, "MLP-Mixer block", _mlp_mixer_block, [(1, 64, 128)])
    yield _nn("nn_gelu_tanh_rmsnorm_ffn", pat, "RMSNorm + tanh-GELU FFN", _gelu_tanh_ffn, [(1, 64, 128)],
              opset=18, exporter="dynamo")
    yield _nn("nn_se_mish_groupnorm", pat, "Mish + GroupNorm + SE residual block", _se_resblock_mish,
              [(1, 3, 128, 128)])
    yield _nn("nn_pixelshuffle_sr", pat, "ESPCN-style super-resolution (PReLU, PixelShuffle)", _pixel_shuffle_sr,
              [(1, 3, 96, 96)])

    yield from _wave2()
    yield from _wave3()
    yield from _wave4()
    yield from _wave5()
    yield from _wave6()
    yield from _wave7()
    yield from _wave8()
    yield from _wave9()
    yield from _wave10()


def _spandrel(name: str, arch: str, shape, exporter: str = "torchscript", opset: int = 17, fixed: tuple = (),
              **kwargs) -> Spec:
    """An image-restoration network from spandrel's architecture definitions (plain torch modules; `arch` is
    `<Package>.<module>:<class>` under `spandrel.architectures`), constructed directly with a small config:
    random init, no state dict is loaded. `fixed` are further positional arguments of its forward, passed as
    constants (the TorchScript exporter would otherwise make a Python scalar default a graph input)."""
    package, cls = arch.split(":")

    def make():
        import importlib

        import torch

        class Fixed(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x, *fixed)

        module = importlib.import_module(f"spandrel.architectures.{top}.__arch.{file}")
        net = getattr(module, cls)(**kwargs)
        return Fixed(net) if fixed else net

    top, file = package.split(".", 1)
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    inputs = tuple(tuple(s) for s in shape) if isinstance(shape[0], tuple) else (tuple(shape),)
    call = f"spandrel.architectures.{top}.{cls}({args})" + (f"(x, {', '.join(map(repr, fixed))})" if fixed else "")
    return Spec(name, "spandrel/restoration", "spandrel", call, make, inputs, exporter, opset)


def _hf_call(name: str, family: str, model: str, config: str, inputs, names, call_note: str, int_inputs=(),
             fixed: Callable[[], dict] | None = None, outputs: int | tuple[int, ...] = 1, opset: int = 17,
             exporter: str = "torchscript", post: Callable[[object], None] | None = None, **kwargs) -> Spec:
    """A transformers model whose graph inputs are passed by keyword (`names`, one per input), with `fixed()`'s
    tensors (fixed word boxes) added as constants of the graph, exported on its first output, its first `outputs`
    outputs, or the outputs at the indices `outputs` names; `post(model)` changes the constructed model (a
    codebook the library initialises to zeros)."""
    def make():
        import torch
        import transformers

        class Call(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *args):
                extra = fixed() if fixed else {}
                kw = dict(zip(names, args)) | extra
                out = self.inner(**kw, return_dict=False)
                out = out if isinstance(out, (tuple, list)) else (out,)
                if isinstance(outputs, tuple):
                    return tuple(out[i] for i in outputs)
                return out[0] if outputs == 1 else tuple(out[:outputs])

        cfg = getattr(transformers, config)(**kwargs)
        cfg._attn_implementation = "eager"
        inner = getattr(transformers, model)(cfg)
        if post:
            post(inner)
        return Call(inner)

    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    first = f"[{', '.join(map(str, outputs))}]" if isinstance(outputs, tuple) else \
        "[0]" if outputs == 1 else f"[:{outputs}]"
    return Spec(name, family, "transformers",
                f"transformers.{model}(transformers.{config}({args}), eager attention)({call_note}){first}",
                make, tuple(inputs), exporter, opset, tuple(int_inputs))


def _random_codebooks(model) -> None:
    """EnCodec initialises its codebooks (buffers, not parameters) to zeros, so every frame would quantize to code
    0 and the decoded audio would not depend on the input: draw them from N(0, 0.05^2) (seed 3), about the spread
    of the random encoder's output (std 0.04), so that nearest codes vary with the input."""
    import torch

    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if name.endswith("codebook.embed"):
                buffer.copy_(torch.randn(buffer.shape, generator=generator) * 0.05)


def _layout_boxes(tokens: int):
    """Fixed, valid word boxes on a 0-1000 grid (x0 < x1, y0 < y1): a reading-order grid of `tokens` words."""
    import torch

    i = torch.arange(tokens)
    x0, y0 = (i % 4) * 250 + 10, (i // 4) * 60 + 10
    return torch.stack([x0, y0, x0 + 200, y0 + 40], dim=-1).unsqueeze(0)


def _pix2struct_patches(rows: int, cols: int, depth: int):
    """Pix2Struct's flattened patches: the row and column index (1-based) in front of each patch's pixels; the
    graph takes the pixels and adds the fixed indices, so they stay valid embedding ids."""
    import torch

    class Patches(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            r = torch.arange(1, rows + 1).repeat_interleave(cols).float()
            c = torch.arange(1, cols + 1).repeat(rows).float()
            self.register_buffer("ids", torch.stack([r, c], dim=-1).unsqueeze(0), persistent=False)

        def forward(self, pixels):
            patches = torch.cat([self.ids, pixels], dim=-1)
            return self.inner(flattened_patches=patches, attention_mask=torch.ones(1, rows * cols),
                              return_dict=False)[0]

    return Patches


def _pix2struct():
    import transformers

    cfg = transformers.Pix2StructVisionConfig(hidden_size=192, num_hidden_layers=4, num_attention_heads=3,
                                              d_ff=512, d_kv=64, patch_embed_hidden_size=768, seq_len=128)
    cfg._attn_implementation = "eager"
    return _pix2struct_patches(8, 16, 768)(transformers.Pix2StructVisionModel(cfg))


def _trocr():
    """TrOCR: a ViT encoder on a 64x256 text-line image and the TrOCR decoder, one teacher-forced pass over 8
    target tokens (logits)."""
    import torch
    import transformers

    enc = transformers.ViTConfig(hidden_size=192, num_hidden_layers=4, num_attention_heads=3, intermediate_size=768,
                                 image_size=[64, 256], patch_size=16)
    dec = transformers.TrOCRConfig(vocab_size=1000, d_model=256, decoder_layers=2, decoder_attention_heads=4,
                                   decoder_ffn_dim=1024, max_position_embeddings=64, cross_attention_hidden_size=192)
    cfg = transformers.VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
    cfg.decoder_start_token_id, cfg.pad_token_id = 2, 1
    cfg._attn_implementation = "eager"
    cfg.encoder._attn_implementation = cfg.decoder._attn_implementation = "eager"

    class Step(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, pixels, tokens):
            return self.inner(pixel_values=pixels, decoder_input_ids=tokens, return_dict=False)[0]

    return Step(transformers.VisionEncoderDecoderModel(cfg))


def _wave9() -> Iterator[Spec]:
    """Ninth wave: architecture families the corpus lacked, held out by family (none of spandrel/restoration,
    transformers/audio-codec, transformers/vocoder, transformers/document-ocr is a derive family): image
    restoration and super-resolution networks from spandrel's architecture definitions, neural audio codecs
    (encode, quantize, decode) and mel-spectrogram vocoders, document / OCR models (text-line and page encoders,
    layout-aware text+image encoders with fixed word boxes). Small random-initialised configs, static shapes."""
    yield _spandrel("spandrel_esrgan_rrdb", "ESRGAN.RRDB:RRDBNet", (1, 3, 64, 64), num_filters=32, num_blocks=3,
                    scale=2)
    yield _spandrel("spandrel_compact_srvgg", "Compact.SRVGG:SRVGGNetCompact", (1, 3, 64, 64), num_feat=32,
                    num_conv=8, upscale=4)
    yield _spandrel("spandrel_swinir", "SwinIR.SwinIR:SwinIR", (1, 3, 64, 64), img_size=64, embed_dim=60,
                    depths=[2, 2], num_heads=[6, 6], window_size=8, mlp_ratio=2.0, upscale=2,
                    upsampler="pixelshuffledirect", drop_path_rate=0.0)
    yield _spandrel("spandrel_hat", "HAT.HAT:HAT", (1, 3, 64, 64), img_size=64, embed_dim=60, depths=(2, 2),
                    num_heads=(6, 6), window_size=8, mlp_ratio=2.0, upscale=2, num_feat=32, drop_path_rate=0.0)
    yield _spandrel("spandrel_dat", "DAT.DAT:DAT", (1, 3, 64, 64), img_size=64, embed_dim=60, split_size=[8, 16],
                    depth=[2, 2], num_heads=[2, 2], expansion_factor=2.0, upscale=2, drop_path_rate=0.0)
    yield _spandrel("spandrel_omnisr", "OmniSR.OmniSR:OmniSR", (1, 3, 64, 64), num_feat=32, block_num=1,
                    window_size=8, res_num=2, up_scale=2)
    yield _spandrel("spandrel_span", "SPAN.span:SPAN", (1, 3, 64, 64), num_in_ch=3, num_out_ch=3,
                    feature_channels=32, upscale=2)
    yield _spandrel("spandrel_realcugan_2x", "RealCUGAN.upcunet_v3:UpCunet2x", (1, 3, 64, 64),
                    fixed=(1.0,))
    yield _spandrel("spandrel_nafnet", "NAFNet.NAFNet_arch:NAFNet", (1, 3, 128, 128), width=16, middle_blk_num=1,
                    enc_blk_nums=[1, 1, 1], dec_blk_nums=[1, 1, 1])
    yield _spandrel("spandrel_scunet", "SCUNet.SCUNet:SCUNet", (1, 3, 128, 128), config=[2, 2, 2, 2, 2, 2, 2],
                    dim=64, input_resolution=128)
    yield _spandrel("spandrel_ditn", "DITN.DITN_Real:DITN_Real", (1, 3, 64, 64), dim=32, ITL_blocks=2, SAL_blocks=2,
                    UFONE_blocks=1, upscale=2)
    yield _spandrel("spandrel_safmn", "SAFMN.safmn:SAFMN", (1, 3, 64, 64), dim=32, n_blocks=4, upscaling_factor=2)
    yield _spandrel("spandrel_rgt", "RGT.rgt:RGT", (1, 3, 64, 64), img_size=64, embed_dim=60, depth=[2, 2],
                    num_heads=[2, 2], mlp_ratio=2.0, upscale=2, split_size=[8, 16], drop_path_rate=0.0)
    yield _spandrel("spandrel_craft", "CRAFT.CRAFT:CRAFT", (1, 3, 64, 64), window_size=16, embed_dim=48,
                    depths=[2, 2], num_heads=[6, 6], upscale=2)
    yield _spandrel("spandrel_realplksr", "PLKSR.RealPLKSR:RealPLKSR", (1, 3, 64, 64), dim=32, n_blocks=4,
                    upscaling_factor=2, kernel_size=17)
    yield _spandrel("spandrel_retinexformer", "RetinexFormer.retinexformer_arch:RetinexFormer", (1, 3, 128, 128),
                    n_feat=32, stage=1, num_blocks=[1, 1, 1])
    yield _spandrel("spandrel_mixdehazenet", "MixDehazeNet.MixDehazeNet:MixDehazeNet", (1, 3, 128, 128),
                    embed_dims=[16, 32, 64, 32, 16], depths=[1, 1, 1, 1, 1])
    codec = "transformers/audio-codec"
    yield _hf_call("hf_encodec", codec, "EncodecModel", "EncodecConfig", [(1, 1, 3200)], ["input_values"],
                   "input_values: encode, quantize, decode (codebooks drawn from N(0, 0.05^2))", outputs=2,
                   post=_random_codebooks, num_filters=16, hidden_size=64,
                   codebook_size=256, num_lstm_layers=1, target_bandwidths=[1.5, 3.0], sampling_rate=16000)
    yield _hf_call("hf_dac", codec, "DacModel", "DacConfig", [(1, 1, 4096)], ["input_values"],
                   "input_values: encode, quantize, decode", encoder_hidden_size=16,
                   downsampling_ratios=[2, 4, 4, 8], decoder_hidden_size=128, n_codebooks=4, codebook_size=256,
                   codebook_dim=8, hidden_size=256, upsampling_ratios=[8, 4, 4, 2], outputs=(1, 3))
    voc = "transformers/vocoder"
    yield _hf_call("hf_speecht5_hifigan", voc, "SpeechT5HifiGan", "SpeechT5HifiGanConfig", [(1, 50, 80)],
                   ["spectrogram"], "spectrogram", upsample_initial_channel=128,
                   upsample_rates=[4, 4, 4, 4], upsample_kernel_sizes=[8, 8, 8, 8],
                   resblock_kernel_sizes=[3, 7, 11], resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5], [1, 3, 5]])
    # TorchScript cannot export its location-variable convolution's Unfold (input size not accessible)
    yield _hf_call("hf_univnet_dynamo", voc, "UnivNetModel", "UnivNetConfig", [(1, 50, 100), (1, 50, 64)],
                   ["input_features", "noise_sequence"], "input_features, noise_sequence", exporter="dynamo",
                   opset=18,
                   model_hidden_channels=32, num_mel_bins=100, resblock_stride_sizes=[8, 8, 4],
                   resblock_kernel_sizes=[3, 3, 3], kernel_predictor_hidden_channels=64)
    doc = "transformers/document-ocr"
    yield _hf_call("hf_layoutlmv3", doc, "LayoutLMv3Model", "LayoutLMv3Config", [(1, 16), (1, 3, 224, 224)],
                   ["input_ids", "pixel_values"], "input_ids, fixed word boxes, pixel_values", int_inputs=(1000, 0),
                   fixed=lambda: {"bbox": _layout_boxes(16)}, vocab_size=1000, hidden_size=192,
                   num_hidden_layers=4, num_attention_heads=3, intermediate_size=768, max_position_embeddings=64,
                   coordinate_size=32, shape_size=32, input_size=224, patch_size=16)
    yield _hf_call("hf_lilt", doc, "LiltModel", "LiltConfig", [(1, 16)], ["input_ids"],
                   "input_ids, fixed word boxes", int_inputs=(1000,), fixed=lambda: {"bbox": _layout_boxes(16)},
                   vocab_size=1000, hidden_size=192, num_hidden_layers=4, num_attention_heads=3,
                   intermediate_size=768, max_position_embeddings=64, channel_shrink_ratio=4)
    yield _hf_call("hf_donut_swin", doc, "DonutSwinModel", "DonutSwinConfig", [(1, 3, 224, 224)], ["pixel_values"],
                   "pixel_values", image_size=224, embed_dim=48, depths=[2, 2, 2, 2], num_heads=[2, 4, 8, 16],
                   window_size=7)
    yield Spec("hf_pix2struct_vision", doc, "transformers",
               "transformers.Pix2StructVisionModel(transformers.Pix2StructVisionConfig(hidden_size=192, "
               "num_hidden_layers=4, num_attention_heads=3, d_ff=512, d_kv=64, patch_embed_hidden_size=768, "
               "seq_len=128), eager attention)(flattened_patches = fixed row/column ids + pixels, all-ones mask)[0]",
               _pix2struct, ((1, 128, 768),))
    yield Spec("hf_trocr", doc, "transformers",
               "transformers.VisionEncoderDecoderModel(ViTConfig(hidden_size=192, num_hidden_layers=4, "
               "num_attention_heads=3, intermediate_size=768, image_size=[64, 256], patch_size=16) + "
               "TrOCRConfig(vocab_size=1000, d_model=256, decoder_layers=2, decoder_attention_heads=4, "
               "decoder_ffn_dim=1024, max_position_embeddings=64), eager attention)"
               "(pixel_values, decoder_input_ids)[0]",
               _trocr, ((1, 3, 64, 256), (1, 8)), int_inputs=(0, 1000))
    yield _hf_call("hf_mgpstr", doc, "MgpstrForSceneTextRecognition", "MgpstrConfig", [(1, 3, 32, 128)],
                   ["pixel_values"], "pixel_values", outputs=1, image_size=[32, 128], patch_size=4,
                   hidden_size=192, num_hidden_layers=4, num_attention_heads=3, mlp_ratio=4.0, max_token_length=27,
                   num_bpe_labels=1000, num_wordpiece_labels=1000)


# ---- wave 10 -----------------------------------------------------------------------------------------------

def _fixed_call(inner, fixed: Callable[[], tuple] = lambda: (), pick: int | tuple[int, ...] | None = 0,
                kwargs: Callable[[], dict] = dict):
    """Wrap `inner` so that the graph inputs come first and `fixed()`'s tensors (lengths, an edge list) follow as
    constants of the graph; keep the output at index (or dict key) `pick` (a tuple keeps several; None keeps all)."""
    import torch

    class Call(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            out = self.inner(*args, *fixed(), **kwargs())
            if pick is None or not isinstance(out, (tuple, list, dict)):
                return out
            return tuple(out[i] for i in pick) if isinstance(pick, tuple) else out[pick]

    return Call().eval()


def _torchaudio(name: str, fn: str, shape, call_note: str = "", fixed: Callable[[], tuple] = lambda: (),
                pick: int | tuple[int, ...] | None = 0, exporter: str = "torchscript", opset: int = 17,
                **kwargs) -> Spec:
    """A torchaudio.models architecture from its constructor (random init; the `*_base` factories would only
    preset a large config, and the `bundles` that carry weights are not used)."""
    def make():
        import torchaudio

        return _fixed_call(getattr(torchaudio.models, fn)(**kwargs), fixed, pick)

    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    inputs = tuple(tuple(s) for s in shape) if isinstance(shape[0], tuple) else (tuple(shape),)
    sel = "" if pick is None else f"[{', '.join(map(str, pick))}]" if isinstance(pick, tuple) else f"[{pick}]"
    return Spec(name, "torchaudio/speech", "torchaudio", f"torchaudio.models.{fn}({args})({call_note}){sel}", make,
                inputs, exporter, opset)


def _lengths(n: int):
    import torch

    return lambda: (torch.tensor([n]),)


def _random_graph(nodes: int, edges: int, self_loops: bool = False):
    """A fixed random directed graph (seed 4, no self loops, or one per node after the random edges): the edge list
    is a constant of the graph."""
    import torch

    generator = torch.Generator().manual_seed(4)
    src = torch.randint(0, nodes, (edges,), generator=generator)
    dst = (src + torch.randint(1, nodes, (edges,), generator=generator)) % nodes
    edge_index = torch.stack([src, dst])
    if self_loops:
        edge_index = torch.cat([edge_index, torch.arange(nodes).repeat(2, 1)], dim=1)
    return edge_index


def _pyg(name: str, cls: str, nodes: int, features: int, edges: int, opset: int = 17, self_loops: bool = False,
         exporter: str = "torchscript", **kwargs) -> Spec:
    """A torch_geometric BasicGNN (`torch_geometric.nn.models`) on node features, over a fixed random graph (with
    `self_loops`, the graph's self loops are part of the constant edge list, not added by the layer at run time)."""
    def make():
        import torch_geometric

        edge_index = _random_graph(nodes, edges, self_loops)
        return _fixed_call(getattr(torch_geometric.nn.models, cls)(**kwargs), lambda: (edge_index,), None)

    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return Spec(name, "pyg/graph", "torch_geometric",
                f"torch_geometric.nn.models.{cls}({args})(x, fixed random edge_index: {nodes} nodes, {edges} edges"
                + (f" + {nodes} self loops)" if self_loops else ")"),
                make, ((nodes, features),), exporter, opset)


def _dgcnn(points: int = 512, k: int = 16):
    """DGCNN-style point-cloud classifier: two torch_geometric EdgeConv layers (max aggregation) on a k-nearest-
    neighbour graph computed in the graph (pairwise distances, TopK), the second on the first's features (dynamic
    graph), then max pooling over points and an MLP."""
    import torch
    import torch_geometric

    def knn_edges(x):
        d = (x.unsqueeze(0) - x.unsqueeze(1)).pow(2).sum(-1)
        idx = d.topk(k + 1, dim=1, largest=False).indices[:, 1:]  # drop the point itself
        dst = torch.arange(x.shape[0]).unsqueeze(1).expand(-1, k)
        return torch.stack([idx.reshape(-1), dst.reshape(-1)])

    def mlp(*dims):
        layers = []
        for a, b in itertools.pairwise(dims):
            layers += [torch.nn.Linear(a, b), torch.nn.LeakyReLU(0.2)]
        return torch.nn.Sequential(*layers)

    class DGCNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = torch_geometric.nn.EdgeConv(mlp(6, 64, 64), aggr="max")
            self.conv2 = torch_geometric.nn.EdgeConv(mlp(128, 128), aggr="max")
            self.head = torch.nn.Sequential(mlp(192, 256), torch.nn.Linear(256, 10))

        def forward(self, pos):
            x1 = self.conv1(pos, knn_edges(pos)).reshape(points, 64)
            x2 = self.conv2(x1, knn_edges(x1)).reshape(points, 128)
            return self.head(torch.cat([x1, x2], dim=1).max(dim=0, keepdim=True).values)

    return DGCNN().eval()


def _nnaudio(name: str, cls: str, samples: int, log: bool = False, **kwargs) -> Spec:
    """An nnAudio front end (the transform as fixed Conv1d kernels), optionally followed by log(x + 1e-6)."""
    def make():
        import nnAudio.features
        import torch

        class Front(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.spec = getattr(nnAudio.features, cls)(**kwargs, verbose=False)

            def forward(self, x):
                y = self.spec(x)
                return torch.log(y + 1e-6) if log else y

        return Front().eval()

    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return Spec(name, "nnaudio/spectrogram", "nnAudio",
                f"nnAudio.features.{cls}({args})" + (" + log(x + 1e-6)" if log else ""), make, ((1, samples),))


def _tabnet():
    import torch
    from pytorch_tabnet.tab_network import TabNet

    return _fixed_call(TabNet(input_dim=32, output_dim=4, n_d=16, n_a=16, n_steps=3, virtual_batch_size=1,
                              group_attention_matrix=torch.eye(32)), pick=0)


def _spiking_cnn(steps: int = 8):
    """A convolutional spiking network in snntorch: leaky integrate-and-fire neurons after each layer, the same
    image presented for `steps` time steps (the loop is unrolled), output spike counts."""
    import snntorch
    import torch

    class CSNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = torch.nn.Conv2d(1, 12, 5), torch.nn.Conv2d(12, 32, 5)
            self.fc = torch.nn.Linear(32 * 4 * 4, 10)
            self.lif1, self.lif2, self.lif3 = (snntorch.Leaky(beta=0.9) for _ in range(3))

        def forward(self, x):
            mem1, mem2, mem3 = self.lif1.init_leaky(), self.lif2.init_leaky(), self.lif3.init_leaky()
            count = 0
            for _ in range(steps):
                spk1, mem1 = self.lif1(torch.nn.functional.max_pool2d(self.conv1(x), 2), mem1)
                spk2, mem2 = self.lif2(torch.nn.functional.max_pool2d(self.conv2(spk1), 2), mem2)
                spk3, mem3 = self.lif3(self.fc(spk2.flatten(1)), mem3)
                count = count + spk3
            return count

    return CSNN().eval()


def _coca():
    """open_clip's CoCa (contrastive captioner): a ViT image tower with an attentional pooler, a causal text tower
    and a multimodal text decoder cross-attending to the image tokens; one teacher-forced pass (caption logits)."""
    import open_clip

    vision = open_clip.model.CLIPVisionCfg(layers=4, width=192, head_width=64, patch_size=16, image_size=160,
                                           attentional_pool=True, attn_pooler_queries=32, attn_pooler_heads=4,
                                           output_tokens=True)
    text = open_clip.model.CLIPTextCfg(context_length=16, vocab_size=1000, width=192, heads=3, layers=2,
                                       embed_cls=True, output_tokens=True)
    multimodal = open_clip.coca_model.MultimodalCfg(context_length=16, vocab_size=1000, width=192, heads=3,
                                                    layers=2, attn_pooler_heads=4)
    model = open_clip.CoCa(embed_dim=192, multimodal_cfg=multimodal, text_cfg=text, vision_cfg=vision)
    return _fixed_call(model, pick=("image_features", "text_features", "logits"),
                       kwargs=lambda: {"output_labels": False})


def _wave10() -> Iterator[Spec]:
    """Tenth wave: architecture families the corpus lacked, held out by family: torchaudio's speech models,
    state-space and recurrent language models in transformers, graph and point-cloud networks in
    torch_geometric, nnAudio spectrogram front ends, TabNet, a spiking network in snntorch and open_clip's CoCa.
    Small random-initialised configs, static shapes; graph edge lists and sequence lengths are constants."""
    yield _torchaudio("ta_conformer", "Conformer", (1, 100, 80), "input, lengths=[100]", _lengths(100),
                      input_dim=80, num_heads=4, ffn_dim=256, num_layers=2, depthwise_conv_kernel_size=31)
    yield _torchaudio("ta_emformer", "Emformer", (1, 66, 80), "input (64 frames + 2 right context), lengths=[64]",
                      _lengths(64), input_dim=80, num_heads=4, ffn_dim=256, num_layers=2, segment_length=8,
                      left_context_length=16, right_context_length=2, max_memory_size=4)
    yield _torchaudio("ta_wavlm", "wavlm_model", (1, 16000), "waveforms", extractor_mode="group_norm",
                      extractor_conv_layer_config=[(64, 10, 5), (64, 3, 2), (64, 3, 2), (64, 3, 2), (64, 2, 2),
                                                   (64, 2, 2)],
                      extractor_conv_bias=False, encoder_embed_dim=192, encoder_projection_dropout=0.0,
                      encoder_pos_conv_kernel=32, encoder_pos_conv_groups=8, encoder_num_layers=2,
                      encoder_num_heads=4, encoder_num_buckets=80, encoder_max_distance=400,
                      encoder_attention_dropout=0.0, encoder_ff_interm_features=384, encoder_ff_interm_dropout=0.0,
                      encoder_dropout=0.0, encoder_layer_norm_first=False, encoder_layer_drop=0.0, aux_num_out=None)
    yield _torchaudio("ta_deepspeech", "DeepSpeech", (1, 1, 100, 80), "x", pick=None, n_feature=80, n_hidden=256,
                      n_class=40)
    yield _torchaudio("ta_squim_objective", "squim_objective_model", (1, 16000), "x", pick=None, feat_dim=64,
                      win_len=64, d_model=128, nhead=4, hidden_dim=256, num_blocks=2, rnn_type="LSTM",
                      chunk_size=32, chunk_stride=16)
    yield _torchaudio("ta_wavernn_dynamo", "WaveRNN", ((1, 1, 3200), (1, 1, 80, 20)), "waveform, specgram",
                      pick=None, exporter="dynamo", opset=18,
                      upsample_scales=[5, 5, 8], n_classes=256, hop_length=200, n_res_block=2, n_rnn=256, n_fc=256,
                      n_freq=80, n_hidden=64, n_output=64)
    ssm = "transformers/ssm-recurrent"
    yield _hf_call("hf_mamba_dynamo", ssm, "MambaModel", "MambaConfig", [(1, 32)], ["input_ids"], "input_ids",
                   int_inputs=(1000,), exporter="dynamo", opset=18, vocab_size=1000, hidden_size=128, state_size=16,
                   num_hidden_layers=2,
                   expand=2, conv_kernel=4, use_cache=False, use_associative_scan=False)
    yield _hf_call("hf_mamba2_dynamo", ssm, "Mamba2Model", "Mamba2Config", [(1, 32)], ["input_ids"], "input_ids",
                   int_inputs=(1000,), exporter="dynamo", opset=18, vocab_size=1000, hidden_size=128, num_heads=8, head_dim=32, state_size=32,
                   n_groups=1, num_hidden_layers=2, expand=2, conv_kernel=4, chunk_size=16, use_cache=False)
    yield _hf_call("hf_rwkv", ssm, "RwkvModel", "RwkvConfig", [(1, 32)], ["input_ids"], "input_ids",
                   int_inputs=(1000,), vocab_size=1000, hidden_size=128, num_hidden_layers=2,
                   attention_hidden_size=128, intermediate_size=512, context_length=64, use_cache=False)
    yield _hf_call("hf_xlstm", ssm, "xLSTMModel", "xLSTMConfig", [(1, 32)], ["input_ids"], "input_ids",
                   int_inputs=(1000,), vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_heads=4,
                   chunk_size=16, mode="inference", autocast_kernel_dtype="float32", use_cache=False)
    yield _pyg("pyg_gcn", "GCN", 128, 32, 512, in_channels=32, hidden_channels=64, num_layers=3, out_channels=8)
    yield _pyg("pyg_gat_dynamo", "GAT", 128, 32, 512, exporter="dynamo", opset=18, self_loops=True, in_channels=32, hidden_channels=64, num_layers=2,
               out_channels=8, heads=4, v2=True, add_self_loops=False)
    yield _pyg("pyg_graphsage", "GraphSAGE", 128, 32, 512, in_channels=32, hidden_channels=64, num_layers=2,
               out_channels=8, aggr="mean")
    yield _pyg("pyg_gin", "GIN", 128, 32, 512, in_channels=32, hidden_channels=64, num_layers=3, out_channels=8)
    yield Spec("pyg_dgcnn_dynamo", "pyg/point-cloud", "torch_geometric", "torch_geometric.nn.EdgeConv x2 (max) on in-graph k-NN (k=16), "
              "max pool, MLP", _dgcnn, ((512, 3),), "dynamo", 18)
    yield _nnaudio("nnaudio_mel_log", "MelSpectrogram", 16000, log=True, sr=16000, n_fft=512, hop_length=160,
                   n_mels=64)
    yield _nnaudio("nnaudio_cqt", "CQT1992v2", 16000, sr=16000, hop_length=160, fmin=32.7, n_bins=84,
                   bins_per_octave=12)
    yield Spec("tabnet_dynamo", "pytorch_tabnet/tabular", "pytorch_tabnet", "pytorch_tabnet.tab_network.TabNet(input_dim=32, output_dim=4, "
              "n_d=16, n_a=16, n_steps=3, virtual_batch_size=1, group_attention_matrix=eye(32))[0]", _tabnet, ((1, 32),), "dynamo", 18)
    yield Spec("snntorch_csnn", "snntorch/spiking", "snntorch", "Conv2d(1,12,5)/Conv2d(12,32,5)/Linear(512,10), each followed "
              "by snntorch.Leaky(beta=0.9); 8 time steps, spike counts", _spiking_cnn, ((1, 1, 28, 28),))
    yield Spec("openclip_coca", "open_clip/vision-text", "open_clip_torch", "open_clip.CoCa(embed_dim=192, ViT 4x192 patch 16 at 160 px "
              "with attentional pooler, text 2x192 ctx 16 vocab 1000, multimodal decoder 2x192)(image, text, "
              "output_labels=False): image_features, text_features, logits", _coca, ((1, 3, 160, 160), (1, 16)), int_inputs=(0, 1000))


def _wave2() -> Iterator[Spec]:
    """Second wave: more architectures per family, smallest first within each family."""
    cls = "torchvision/classification"
    for fn in ("regnet_x_800mf", "regnet_y_800mf", "regnet_x_1_6gf", "regnet_y_1_6gf", "mnasnet0_75", "mnasnet1_3",
               "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "efficientnet_b2", "efficientnet_v2_s", "densenet169",
               "maxvit_t", "swin_v2_t", "mobilenet_v3_large"):
        if fn != "mobilenet_v3_large":
            yield _tv(f"tv_{fn}", cls, fn)
    yield _tv("tv_resnet18_dynamo", cls, "resnet18", opset=18, exporter="dynamo")
    yield _tv("tv_mobilenet_v3_small_dynamo", cls, "mobilenet_v3_small", opset=18, exporter="dynamo")
    yield _tv("tv_squeezenet1_1_opset19", cls, "squeezenet1_1", opset=19)
    yield _tv("tv_shufflenet_v2_x0_5_opset12", cls, "shufflenet_v2_x0_5", opset=12)
    yield _tv_seg("tv_lraspp_mobilenet_v3_large", "lraspp_mobilenet_v3_large")
    yield _tv_seg("tv_deeplabv3_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large")
    yield _tv_seg("tv_fcn_resnet50", "fcn_resnet50", shape=(1, 3, 256, 256))
    yield _tv_det_backbone("tv_fasterrcnn_mobilenet_v3_large_fpn_backbone", "fasterrcnn_mobilenet_v3_large_fpn")
    yield _tv_det_backbone("tv_retinanet_resnet50_fpn_backbone", "retinanet_resnet50_fpn")
    yield _tv_det_backbone("tv_fasterrcnn_resnet50_fpn_backbone", "fasterrcnn_resnet50_fpn")
    yield _tv_det_backbone("tv_ssdlite320_mobilenet_v3_large_backbone", "ssdlite320_mobilenet_v3_large")

    def _video():
        import torchvision

        return torchvision.models.video.r3d_18(weights=None)

    yield Spec("tv_r3d_18", "torchvision/video", "torchvision", "torchvision.models.video.r3d_18(weights=None)",
               _video, ((1, 3, 8, 112, 112),))

    cnn = ("resnet10t", "regnetx_002", "lcnet_050", "mobilenetv2_100", "mobilenetv4_conv_small", "tinynet_a",
           "hardcorenas_a", "mnasnet_100", "fbnetc_100", "spnasnet_100", "mixnet_s", "efficientnet_lite0",
           "rexnet_100", "repghostnet_050", "ghostnetv2_100", "convnextv2_atto", "repvgg_a0", "resnet18d",
           "skresnet18", "gernet_s", "ese_vovnet19b_dw", "starnet_s1", "hgnetv2_b0", "nf_regnet_b0",
           "efficientnetv2_rw_t", "dla34", "resnet26d", "ecaresnet26t", "seresnext26d_32x4d", "hrnet_w18_small",
           "selecsls42b", "cspresnet50", "res2net50_26w_4s", "regnetz_b16", "dpn68", "xception41", "inception_v3")
    for arch in cnn:
        yield _timm(f"timm_{arch}", "timm/cnn", arch)
    yield _timm("timm_halonet26t", "timm/cnn", "halonet26t", shape=(1, 3, 256, 256))
    yield _timm("timm_botnet26t_256", "timm/cnn", "botnet26t_256", shape=(1, 3, 256, 256))
    yield _timm("timm_lambda_resnet26t", "timm/cnn", "lambda_resnet26t", shape=(1, 3, 256, 256))
    yield _timm("timm_efficientnet_b0_opset15", "timm/cnn", "efficientnet_b0", opset=15)
    yield _timm("timm_convnext_atto_opset19", "timm/cnn", "convnext_atto", opset=19)

    vit = ("deit_tiny_distilled_patch16_224", "xcit_nano_12_p16_224", "convit_tiny", "pvt_v2_b0", "tiny_vit_5m_224",
           "mixer_s32_224", "resmlp_12_224", "gmlp_ti16_224", "vit_tiny_r_s16_p8_224", "eva02_tiny_patch14_224",
           "gcvit_xxtiny", "shvit_s1", "mvitv2_tiny", "swinv2_cr_tiny_ns_224", "hiera_tiny_224", "nest_tiny",
           "davit_tiny", "focalnet_tiny_srf", "twins_svt_small")
    for arch in vit:
        yield _timm(f"timm_{arch}", "timm/vit", arch)
    yield _timm("timm_crossvit_tiny_240", "timm/vit", "crossvit_tiny_240", shape=(1, 3, 240, 240))
    yield _timm("timm_vit_little_patch16_reg4_gap_256", "timm/vit", "vit_little_patch16_reg4_gap_256",
                shape=(1, 3, 256, 256))
    yield _timm("timm_deit_tiny_patch16_224_dynamo", "timm/vit", "deit_tiny_patch16_224", opset=18,
                exporter="dynamo")

    hyb = ("efficientvit_m0", "efficientvit_b0", "mobileone_s0", "repvit_m1", "mobilevitv2_050", "efficientformerv2_s0",
           "levit_conv_128s", "fasternet_t0", "visformer_tiny", "coatnet_nano_rw_224", "mobilenetv4_hybrid_medium",
           "poolformerv2_s12", "convformer_s18", "caformer_s18", "inception_next_tiny", "sequencer2d_s", "coat_tiny",
           "rdnet_tiny", "nextvit_small")
    for arch in hyb:
        yield _timm(f"timm_{arch}", "timm/hybrid", arch)
    yield _timm("timm_mobilevit_xs", "timm/hybrid", "mobilevit_xs", shape=(1, 3, 256, 256))
    yield _timm("timm_edgenext_x_small", "timm/hybrid", "edgenext_x_small", shape=(1, 3, 256, 256))
    yield _timm("timm_maxvit_rmlp_pico_rw_256", "timm/hybrid", "maxvit_rmlp_pico_rw_256", shape=(1, 3, 256, 256))

    det, other = "ultralytics/detect", "ultralytics/seg-pose-obb-cls"
    yield _yolo("yolov3_tinyu_320", "yolov3-tinyu.yaml", det)
    yield _yolo("yolov5su_320", "yolov5s.yaml", det)
    yield _yolo("yolov6n_320", "yolov6n.yaml", det)
    yield _yolo("yolov8n_p2_320", "yolov8n-p2.yaml", det)
    yield _yolo("yolov8n_ghost_320", "yolov8n-ghost.yaml", det)
    yield _yolo("yolov9t_320", "yolov9t.yaml", det)
    yield _yolo("yolov10s_320", "yolov10s.yaml", det)
    yield _yolo("yolo12n_320", "yolo12n.yaml", det)
    yield _yolo("yolov8n_416", "yolov8n.yaml", det, size=416)
    yield _yolo("yolov8n_320_opset12", "yolov8n.yaml", det, opset=12)
    yield _yolo("yolo11n_obb_320", "yolo11n-obb.yaml", other)
    yield _yolo("yolo11n_cls_224", "yolo11n-cls.yaml", other, size=224)
    yield _yolo("yolov8s_seg_320", "yolov8s-seg.yaml", other)
    yield _yolo("yolo11s_pose_320", "yolo11s-pose.yaml", other)
    yield _yolo("rtdetr_l_320", "rtdetr-l.yaml", det)

    rnn, tfm, pat = "torch.nn/rnn", "torch.nn/transformer", "torch.nn/patterns"
    yield _nn("nn_lstm_3x256", rnn, "LSTM(64, 256, num_layers=3) + Linear", lambda: _lstm(3, 256), [(1, 16, 64)])
    yield _nn("nn_lstm_1x64_dynamo", rnn, "LSTM(64, 64) + Linear", lambda: _lstm(1, 64), [(1, 32, 64)], opset=18,
              exporter="dynamo")
    yield _nn("nn_crnn_bilstm", rnn, "CRNN: conv stack + BiLSTM over width", _crnn, [(1, 1, 32, 128)])
    yield _nn("nn_conformer_conv_module", pat, "Conformer conv module (GLU, depthwise Conv1d, BN, SiLU)",
              _conformer_conv, [(1, 100, 144)])
    yield _nn("nn_linear_attention", tfm, "linear attention (ELU+1 feature map, Einsum)", _linear_attention,
              [(1, 128, 128)])
    yield _nn("nn_cross_attention_d128", tfm, "cross attention (query 16 tokens, memory 196)", _cross_attention,
              [(1, 16, 128), (1, 196, 128)])
    yield _nn("nn_relpos_bias_attention", tfm, "attention with a learnt relative-position bias (Gather of a table)",
              _relpos_attention, [(1, 49, 96)])
    yield _nn("nn_channel_layernorm_cnn", pat, "ConvNeXt-style LayerNorm over channels on NCHW (permute) and over W",
              _channel_ln_cnn, [(1, 3, 64, 64)])
    yield _nn("nn_stn_gridsample", pat, "spatial transformer (affine grid by MatMul + grid_sample)", _stn, [(1, 1, 64, 64)])
    yield _nn("nn_instnorm_elu_selu", pat, "InstanceNorm + ELU/SELU/Hardsigmoid/Softplus conv net", _misc_acts,
              [(1, 3, 64, 64)])
    yield _nn("nn_dwsep_hardswish_upsample", pat, "depthwise-separable encoder + nearest Upsample decoder",
              _dwsep_unet, [(1, 3, 128, 128)])
    yield _nn("nn_conv3d_block", pat, "Conv3d + BN + ReLU + MaxPool3d", _conv3d, [(1, 3, 8, 32, 32)])


def _crnn():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3, 1, 1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                           torch.nn.Conv2d(32, 64, 3, 1, 1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                           torch.nn.Conv2d(64, 128, 3, 1, 1), torch.nn.ReLU(),
                                           torch.nn.MaxPool2d((8, 1)))
            self.rnn = torch.nn.LSTM(128, 64, bidirectional=True, batch_first=True)
            self.fc = torch.nn.Linear(128, 37)

        def forward(self, x):
            f = self.cnn(x).squeeze(2).permute(0, 2, 1)
            return self.fc(self.rnn(f)[0]).log_softmax(-1)

    return M().eval()


def _conformer_conv():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=144):
            super().__init__()
            self.norm = torch.nn.LayerNorm(d)
            self.pw1 = torch.nn.Conv1d(d, 2 * d, 1)
            self.dw = torch.nn.Conv1d(d, d, 31, padding=15, groups=d)
            self.bn = torch.nn.BatchNorm1d(d)
            self.pw2 = torch.nn.Conv1d(d, d, 1)

        def forward(self, x):
            y = self.norm(x).transpose(1, 2)
            y = torch.nn.functional.glu(self.pw1(y), dim=1)
            y = self.pw2(torch.nn.functional.silu(self.bn(self.dw(y))))
            return x + y.transpose(1, 2)

    return M().eval()


def _linear_attention():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=128, heads=4):
            super().__init__()
            self.h = heads
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.out = torch.nn.Linear(d, d)

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.h, c // self.h).unbind(2)
            q, k = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
            kv = torch.einsum("bnhd,bnhe->bhde", k, v)
            z = 1 / (torch.einsum("bnhd,bhd->bnh", q, k.sum(1)) + 1e-6)
            y = torch.einsum("bnhd,bhde,bnh->bnhe", q, kv, z)
            return self.out(y.reshape(b, n, c))

    return M().eval()


def _cross_attention():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=128, heads=4):
            super().__init__()
            self.h = heads
            self.q, self.kv, self.o = torch.nn.Linear(d, d), torch.nn.Linear(d, 2 * d), torch.nn.Linear(d, d)
            self.norm = torch.nn.LayerNorm(d)

        def forward(self, x, mem):
            b, n, c = x.shape
            m = mem.shape[1]
            q = self.q(x).reshape(b, n, self.h, c // self.h).transpose(1, 2)
            k, v = self.kv(mem).reshape(b, m, 2, self.h, c // self.h).permute(2, 0, 3, 1, 4)
            a = (q @ k.transpose(-1, -2) / (c // self.h) ** 0.5).softmax(-1)
            return self.norm(x + self.o((a @ v).transpose(1, 2).reshape(b, n, c)))

    return M().eval()


def _relpos_attention():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=96, heads=3, window=7):
            super().__init__()
            self.h = heads
            self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.table = torch.nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
            coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
            rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + window - 1
            self.register_buffer("index", rel[..., 0] * (2 * window - 1) + rel[..., 1], persistent=False)

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
            bias = self.table[self.index.reshape(-1)].reshape(n, n, -1).permute(2, 0, 1)
            a = (q @ k.transpose(-1, -2) * (c // self.h) ** -0.5 + bias).softmax(-1)
            return self.o((a @ v).transpose(1, 2).reshape(b, n, c))

    return M().eval()


def _channel_ln_cnn():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 32, 4, 4)
            self.ln_c = torch.nn.LayerNorm(32)
            self.dw = torch.nn.Conv2d(32, 32, 7, padding=3, groups=32)
            self.ln_w = torch.nn.LayerNorm(16)
            self.pw = torch.nn.Conv2d(32, 64, 1)

        def forward(self, x):
            x = self.stem(x)
            x = self.ln_c(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            x = self.ln_w(self.dw(x))
            return torch.nn.functional.gelu(self.pw(x))

    return M().eval()


def _stn():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 7), torch.nn.MaxPool2d(2), torch.nn.ReLU(),
                                           torch.nn.Conv2d(8, 10, 5), torch.nn.MaxPool2d(2), torch.nn.ReLU())
            self.fc = torch.nn.Linear(10 * 12 * 12, 6)

        def forward(self, x):
            theta = self.fc(self.loc(x).flatten(1)).view(-1, 2, 3)
            h, w = x.shape[-2:]  # affine_grid by hand: its ONNX op (AffineGrid) needs opset 20
            ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
            base = torch.stack([xs, ys, torch.ones_like(xs)], -1).reshape(1, h * w, 3)
            grid = (base @ theta.transpose(1, 2)).reshape(-1, h, w, 2)
            return torch.nn.functional.grid_sample(x, grid, align_corners=True)

    return M().eval()


def _misc_acts():
    import torch

    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, 1, 1), torch.nn.InstanceNorm2d(16, affine=True), torch.nn.ELU(),
        torch.nn.Conv2d(16, 16, 3, 2, 1), torch.nn.SELU(), torch.nn.Conv2d(16, 16, 3, 1, 1), torch.nn.Hardsigmoid(),
        torch.nn.Conv2d(16, 16, 3, 1, 1), torch.nn.Softplus(), torch.nn.Conv2d(16, 8, 1), torch.nn.Tanh()).eval()


def _dwsep_unet():
    import torch

    def dw(i, o, s):
        return torch.nn.Sequential(torch.nn.Conv2d(i, i, 3, s, 1, groups=i), torch.nn.BatchNorm2d(i),
                                   torch.nn.Hardswish(), torch.nn.Conv2d(i, o, 1), torch.nn.BatchNorm2d(o),
                                   torch.nn.Hardswish())

    return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, 2, 1), dw(16, 32, 2), dw(32, 64, 2), dw(64, 64, 1),
                               torch.nn.Upsample(scale_factor=2, mode="nearest"), dw(64, 32, 1),
                               torch.nn.Upsample(scale_factor=4, mode="nearest"), torch.nn.Conv2d(32, 3, 1)).eval()


def _conv3d():
    import torch

    return torch.nn.Sequential(torch.nn.Conv3d(3, 16, 3, 1, 1), torch.nn.BatchNorm3d(16), torch.nn.ReLU(),
                               torch.nn.MaxPool3d(2), torch.nn.Conv3d(16, 32, 3, 1, 1), torch.nn.ReLU(),
                               torch.nn.AdaptiveAvgPool3d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10)).eval()


def _tv_custom(name: str, family: str, call: str, build: Callable[[], object], inputs, opset: int = 17,
               exporter: str = "torchscript") -> Spec:
    """A torchvision architecture built by a call that `_tv` cannot express (a class, a wrapper, a forward argument)."""
    return Spec(name, family, "torchvision", call, build, tuple(inputs), exporter, opset)


def _tv_vit_small():
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(image_size=224, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192, mlp_dim=768)


def _tv_raft_small():
    import torch
    import torchvision

    class Flow(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torchvision.models.optical_flow.raft_small(weights=None)

        def forward(self, a, b):
            return self.inner(a, b, num_flow_updates=4)[-1]

    return Flow()


def _tv_quantized(fn: str):
    def make():
        import torch
        import torchvision

        torch.backends.quantized.engine = "qnnpack"
        return getattr(torchvision.models.quantization, fn)(weights=None, quantize=True)

    return make


def _tv_video(fn: str):
    def make():
        import torchvision

        return getattr(torchvision.models.video, fn)(weights=None)

    return make


def _wave3() -> Iterator[Spec]:
    """Third wave (session 24): families and sources not in the corpus before, the most novel structure first,
    so that the RKNN verdicts meet them as a held-out-by-arrival set."""
    det, other = "ultralytics/detect", "ultralytics/seg-pose-obb-cls"
    rnn, tfm, pat = "torch.nn/rnn", "torch.nn/transformer", "torch.nn/patterns"
    cls, vid = "torchvision/classification", "torchvision/video"
    flow = "torchvision/optical-flow"
    yield _yolo("yolo26n_320", "yolo26n.yaml", det)
    yield _tv_custom("tv_raft_small", flow, "torchvision.models.optical_flow.raft_small(weights=None), "
                     "num_flow_updates=4, last flow", _tv_raft_small, [(1, 3, 128, 128), (1, 3, 128, 128)])
    yield _timm("timm_volo_d1_224", "timm/vit", "volo_d1_224")
    yield _timm("timm_volo_d1_224_dynamo", "timm/vit", "volo_d1_224", opset=18, exporter="dynamo")  # Fold
    yield _tv_custom("tv_quantized_mobilenet_v2", "torchvision/quantized",
                     "torchvision.models.quantization.mobilenet_v2(weights=None, quantize=True) (qnnpack)",
                     _tv_quantized("mobilenet_v2"), [(1, 3, 224, 224)], opset=13)
    yield _nn("nn_perceiver_latent_cross_attention", tfm,
              "Perceiver: 32 learnt latents cross-attend to 256 inputs, then 2 latent self-attention layers",
              _perceiver, [(1, 256, 64)])
    yield _nn("nn_conformer_block", tfm, "Conformer block (half FFN, MHSA, conv module, half FFN, LayerNorm)",
              _conformer_block, [(1, 100, 144)])
    yield _nn("nn_rope_swiglu_block", tfm, "LLM block: RMSNorm, rotary embeddings, causal attention, SwiGLU",
              _rope_swiglu, [(1, 64, 256)])
    yield _nn("nn_rope_swiglu_block_dynamo", tfm, "LLM block: RMSNorm, rotary embeddings, causal attention, SwiGLU",
              _rope_swiglu, [(1, 64, 256)], opset=18, exporter="dynamo")
    yield _nn("nn_topk_token_pruning", tfm, "ViT tokens kept by TopK(k=32) of a learnt score, Gather, attention",
              _topk_tokens, [(1, 3, 128, 128)])
    yield _nn("nn_attention_unet", pat, "U-Net with additive attention gates on the skips", _attention_unet,
              [(1, 3, 128, 128)])
    yield _nn("nn_fnet_fft_dynamo", pat, "FNet block: real part of a 2-D FFT as token mixing", _fnet,
              [(1, 64, 128)], opset=18, exporter="dynamo")
    yield _nn("nn_hifigan_generator", pat, "HiFi-GAN-style vocoder: ConvTranspose1d upsampling, dilated residuals, "
              "LeakyReLU", _hifigan, [(1, 80, 32)])
    yield _nn("nn_quartznet_dwconv1d", pat, "QuartzNet-style speech model: depthwise-separable Conv1d blocks, CTC head",
              _quartznet, [(1, 64, 256)])
    yield _nn("nn_gru_transformer_hybrid", rnn, "GRU front end + TransformerEncoderLayer + Linear", _gru_transformer,
              [(1, 50, 64)])
    yield _nn("nn_cbam_resblock", pat, "residual block with CBAM (channel max/avg MLP, spatial max/mean 7x7 conv)",
              _cbam, [(1, 3, 128, 128)])
    yield _nn("nn_vit_block_dynamo_opset19", tfm, "ViT: patch embed, cls token, 2 pre-norm SDPA blocks",
              _vit_tiny, [(1, 3, 96, 96)], opset=19, exporter="dynamo")
    yield _nn("nn_vit_block_opset19", tfm, "ViT: patch embed, cls token, 2 pre-norm SDPA blocks",
              _vit_tiny, [(1, 3, 96, 96)], opset=19)
    yield _timm("timm_eva02_tiny_patch14_224_dynamo", "timm/vit", "eva02_tiny_patch14_224", opset=18,
                exporter="dynamo")
    yield _timm("timm_tnt_s_patch16_224", "timm/vit", "tnt_s_patch16_224")
    yield _timm("timm_beit_base_patch16_224_d192_l4", "timm/vit", "beit_base_patch16_224", embed_dim=192, depth=4,
                num_heads=3)
    yield _timm("timm_mambaout_femto", "timm/hybrid", "mambaout_femto")
    yield _timm("timm_vitamin_small_224", "timm/hybrid", "vitamin_small_224")
    yield _timm("timm_fastvit_mci0", "timm/hybrid", "fastvit_mci0", shape=(1, 3, 256, 256))
    yield _timm("timm_sebotnet33ts_256", "timm/cnn", "sebotnet33ts_256", shape=(1, 3, 256, 256))
    yield _timm("timm_eca_botnext26ts_256", "timm/cnn", "eca_botnext26ts_256", shape=(1, 3, 256, 256))
    yield _timm("timm_lambda_resnet26rpt_256", "timm/cnn", "lambda_resnet26rpt_256", shape=(1, 3, 256, 256))
    yield _timm("timm_haloregnetz_b", "timm/cnn", "haloregnetz_b")
    yield _timm("timm_haloregnetz_b_dynamo", "timm/cnn", "haloregnetz_b", opset=18, exporter="dynamo")
    yield _timm("timm_halonet26t_dynamo", "timm/cnn", "halonet26t", shape=(1, 3, 256, 256), opset=18,
                exporter="dynamo")
    yield _timm("timm_resnetv2_50d_evos", "timm/cnn", "resnetv2_50d_evos")
    yield _timm("timm_resnetv2_50d_frn", "timm/cnn", "resnetv2_50d_frn")
    yield _timm("timm_gcresnet33ts", "timm/cnn", "gcresnet33ts", shape=(1, 3, 256, 256))
    yield _timm("timm_bat_resnext26ts", "timm/cnn", "bat_resnext26ts", shape=(1, 3, 256, 256))
    yield _timm("timm_tresnet_m", "timm/cnn", "tresnet_m")
    yield _timm("timm_eca_nfnet_l0", "timm/cnn", "eca_nfnet_l0")
    for arch in ("test_vit", "test_convnext", "test_efficientnet", "test_byobnet", "test_nfnet", "test_mambaout",
                 "test_coatnet", "test_maxvit"):
        family = {"test_vit": "timm/vit", "test_coatnet": "timm/hybrid", "test_maxvit": "timm/hybrid",
                  "test_mambaout": "timm/hybrid"}.get(arch, "timm/cnn")
        yield _timm(f"timm_{arch}", family, arch, shape=(1, 3, 160, 160))
    yield _timm("timm_test_vit_opset11", "timm/vit", "test_vit", shape=(1, 3, 160, 160), opset=11)
    yield _timm("timm_test_vit_opset14", "timm/vit", "test_vit", shape=(1, 3, 160, 160), opset=14)
    yield _timm("timm_test_convnext_dynamo", "timm/cnn", "test_convnext", shape=(1, 3, 160, 160), opset=18,
                exporter="dynamo")
    yield _timm("timm_deit3_small_patch16_224", "timm/vit", "deit3_small_patch16_224")
    yield _timm("timm_flexivit_small", "timm/vit", "flexivit_small", shape=(1, 3, 240, 240))
    yield _timm("timm_cs3darknet_focus_s", "timm/cnn", "cs3darknet_focus_s", shape=(1, 3, 256, 256))
    yield _timm("timm_cspdarknet53", "timm/cnn", "cspdarknet53", shape=(1, 3, 256, 256))
    yield _timm("timm_darknet17", "timm/cnn", "darknet17", shape=(1, 3, 256, 256))
    for arch in ("res2next50", "hgnet_tiny", "ghostnetv3_100", "rexnetr_100", "semnasnet_100", "vovnet39a",
                 "legacy_seresnet18", "lcnetv2_small", "mobilenetv1_100", "convmixer_768_32"):
        yield _timm(f"timm_{arch}", "timm/cnn", arch)
    yield _timm("timm_ghostnetv3_100_opset13", "timm/cnn", "ghostnetv3_100", opset=13)
    for arch in ("test_efficientnet_gn", "test_efficientnet_ln", "test_efficientnet_evos", "test_resnet",
                 "resnetblur18", "convnext_zepto_rms", "tf_mobilenetv3_small_minimal_100", "ese_vovnet19b_slim_dw",
                 "resnetaa34d"):
        yield _timm(f"timm_{arch}", "timm/cnn", arch, shape=(1, 3, 160, 160))
    yield _timm("timm_vit_pwee_patch16_reg1_gap_256", "timm/vit", "vit_pwee_patch16_reg1_gap_256",
                shape=(1, 3, 256, 256))
    for arch in ("vit_relpos_small_patch16_224", "gmixer_12_224"):
        yield _timm(f"timm_{arch}", "timm/vit", arch)
    yield _tv_custom("tv_vit_l4_h3_d192", cls, "torchvision.models.vision_transformer.VisionTransformer("
                     "image_size=224, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192, mlp_dim=768)",
                     _tv_vit_small, [(1, 3, 224, 224)])
    yield _tv_custom("tv_vit_l4_h3_d192_opset11", cls, "torchvision.models.vision_transformer.VisionTransformer("
                     "image_size=224, patch_size=16, num_layers=4, num_heads=3, hidden_dim=192, mlp_dim=768)",
                     _tv_vit_small, [(1, 3, 224, 224)], opset=11)
    yield _tv("tv_regnet_y_3_2gf", cls, "regnet_y_3_2gf")
    yield _tv_custom("tv_quantized_shufflenet_v2_x0_5", "torchvision/quantized",
                     "torchvision.models.quantization.shufflenet_v2_x0_5(weights=None, quantize=True) (qnnpack)",
                     _tv_quantized("shufflenet_v2_x0_5"), [(1, 3, 224, 224)], opset=13)
    yield _tv_custom("tv_quantized_resnet18", "torchvision/quantized",
                     "torchvision.models.quantization.resnet18(weights=None, quantize=True) (qnnpack)",
                     _tv_quantized("resnet18"), [(1, 3, 224, 224)], opset=13)
    yield _tv_custom("tv_s3d", vid, "torchvision.models.video.s3d(weights=None)", _tv_video("s3d"),
                     [(1, 3, 16, 112, 112)])
    yield _tv_custom("tv_mc3_18", vid, "torchvision.models.video.mc3_18(weights=None)", _tv_video("mc3_18"),
                     [(1, 3, 8, 112, 112)])
    # fcos_resnet50_fpn's backbone is retinanet_resnet50_fpn's (ResNet-50, FPN, P6/P7): already in, not built
    yield _tv_det_backbone("tv_ssd300_vgg16_backbone", "ssd300_vgg16", shape=(1, 3, 300, 300))
    for yaml in ("yolo26n-seg", "yolo26n-pose", "yolo26n-obb"):
        yield _yolo(yaml.replace("-", "_") + "_320", f"{yaml}.yaml", other)
    # yolo26n-cls.yaml is yolo11n-cls.yaml (same graph and dims): not a new architecture, not built
    yield _yolo("yolo26n_p2_320", "yolo26n-p2.yaml", det)
    yield _yolo("yolo26n_320_opset13", "yolo26n.yaml", det, opset=13)
    yield _yolo("yolov5n6_320", "yolov5n6.yaml", det)
    yield _yolo("yolov8n_p6_320", "yolov8n-p6.yaml", det)
    yield _yolo("yolov9s_320", "yolov9s.yaml", det)
    yield _yolo("yolo12n_seg_320", "yolo12n-seg.yaml", other)
    yield _yolo("yolov8s_worldv2_320", "yolov8s-worldv2.yaml", det)


def _wave4() -> Iterator[Spec]:
    """Fourth wave (session 28): held out by arrival. No rule was written after looking at these; the held-out
    figure of session 28 is measured on them with the catalog as it stood before their conversions were read."""
    for arch in ("test_vit2", "test_vit3"):
        yield _timm(f"timm_{arch}", "timm/vit", arch, shape=(1, 3, 160, 160))
    # aten::rms_norm has no TorchScript export below opset 23, and the RoPE ViT passes is_causal as a tensor
    yield _timm("timm_test_vit4", "timm/vit", "test_vit4", shape=(1, 3, 160, 160), opset=18, exporter="dynamo")
    for arch in ("test_convnext2", "test_convnext3", "resnetv2_50x1_bit", "nf_resnet26", "gc_efficientnetv2_rw_t",
                 "mobilenetv4_conv_aa_medium"):
        yield _timm(f"timm_{arch}", "timm/cnn", arch, shape=(1, 3, 160, 160))
    yield _timm("timm_coatnext_nano_rw_224", "timm/hybrid", "coatnext_nano_rw_224")
    yield _timm("timm_fastvit_sa12", "timm/hybrid", "fastvit_sa12", shape=(1, 3, 256, 256))
    yield _timm("timm_vit_small_patch16_rope_224", "timm/vit", "vit_small_patch16_rope_224", opset=18,
                exporter="dynamo")
    yield _tv_custom("tv_r2plus1d_18", "torchvision/video", "torchvision.models.video.r2plus1d_18(weights=None)",
                     _tv_video("r2plus1d_18"), [(1, 3, 8, 112, 112)])
    yield Spec("rtdetr_l_320", "ultralytics/detect", "ultralytics",
               "ultralytics.RTDETR('rtdetr-l.yaml').model.fuse() with the decoder in export mode",
               _ultralytics("RTDETR", "rtdetr-l.yaml", "RTDETRDecoder", export=True), ((1, 3, 320, 320),), "torchscript", 17)


def _wave5() -> Iterator[Spec]:
    """Fifth wave (sessions 29-30): held out by arrival, like the fourth. It brings layer kinds the corpus lacked
    (CondConv routing, cosine window attention with a log-spaced position MLP, 3-D windows, mixture of experts,
    cached attention, RoIAlign, depth and semantic heads); its tables were read only after its held-out figure
    was taken."""
    cnn, vit, hyb = "timm/cnn", "timm/vit", "timm/hybrid"
    pat, tfm = "torch.nn/patterns", "torch.nn/transformer"
    yield _timm("timm_efficientnet_cc_b0_4e", cnn, "efficientnet_cc_b0_4e", shape=(1, 3, 160, 160))
    for arch in ("fbnetv3_b", "dla46x_c", "densenetblur121d", "gernet_m", "resnet51q", "regnetv_040", "inception_v4"):
        yield _timm(f"timm_{arch}", cnn, arch, shape=(1, 3, 160, 160))
    yield _timm("timm_test_vit_relpos", vit, "test_vit_relpos", shape=(1, 3, 160, 160))
    yield _timm("timm_swinv2_tiny_window8_256", vit, "swinv2_tiny_window8_256", shape=(1, 3, 256, 256))
    yield _timm("timm_twins_pcpvt_small", vit, "twins_pcpvt_small")
    yield _timm("timm_maxxvitv2_nano_rw_256", hyb, "maxxvitv2_nano_rw_256", shape=(1, 3, 256, 256))
    # its adaptive pooling sees a symbolic size under TorchScript
    yield _timm("timm_csatv2_dynamo", hyb, "csatv2", opset=18, exporter="dynamo")
    yield _tv_custom("tv_swin3d_t", "torchvision/video", "torchvision.models.video.swin3d_t(weights=None)",
                     _tv_video("swin3d_t"), [(1, 3, 8, 112, 112)])
    yield _tv_seg("tv_deeplabv3_resnet50", "deeplabv3_resnet50", shape=(1, 3, 256, 256))
    other = "ultralytics/seg-pose-obb-cls"
    yield Spec("yolo26n_depth_320", other, "ultralytics",
               "ultralytics.YOLO('yolo26n-depth.yaml').model.fuse() with the Depth head in export mode",
               _ultralytics("YOLO", "yolo26n-depth.yaml", "Depth", export=True, format="onnx"), ((1, 3, 320, 320),))
    yield Spec("yolo26n_sem_320", other, "ultralytics",
               "ultralytics.YOLO('yolo26n-sem.yaml').model.fuse() with the SemanticSegment head in export mode",
               _ultralytics("YOLO", "yolo26n-sem.yaml", "SemanticSegment", export=True, format="onnx"),
               ((1, 3, 320, 320),))
    yield _yolo("yolo12n_pose_320", "yolo12n-pose.yaml", other)
    yield _nn("nn_wavenet_gated_causal", pat, "WaveNet: causal dilated Conv1d, tanh * sigmoid gates, skip sums",
              _wavenet, [(1, 32, 256)])
    yield _nn("nn_pointnet_tnet", pat, "PointNet: learnt 3x3 input transform (MatMul), shared Conv1d MLP, global max",
              _pointnet, [(1, 3, 512)])
    yield _nn("nn_convtasnet_gln", pat, "Conv-TasNet separator: Conv1d encoder, global LayerNorm (GroupNorm(1)), "
              "dilated depthwise blocks with PReLU, masks, ConvTranspose1d decoder", _convtasnet, [(1, 1, 4000)])
    yield _nn("nn_moe_top2_router", tfm, "mixture of 4 expert FFNs, top-2 router (TopK, softmax, one-hot gather)",
              _moe, [(1, 32, 128)])
    yield _nn("nn_kv_cache_decode_step", tfm, "decoder step: one query token, past keys/values concatenated",
              _kv_step, [(1, 1, 128), (1, 4, 63, 32), (1, 4, 63, 32)])
    yield _nn("nn_roi_align_head", pat, "RoIAlign(7x7) on a conv feature map for 8 boxes of one image, then an MLP",
              _roi_align, [(1, 3, 128, 128), (8, 4)], opset=16)
    yield _nn("nn_convlstm_4step", pat, "ConvLSTM cell unrolled over 4 frames (gates from one Conv2d)", _convlstm,
              [(1, 4, 8, 32, 32)])
    yield _nn("nn_einsum_pixel_unshuffle_attention", pat, "PixelUnshuffle stem and einsum attention",
              _einsum_attention, [(1, 3, 64, 64)])


def _hf(name: str, family: str, model: str, config: str, inputs, opset: int = 17, exporter: str = "torchscript",
        int_inputs: tuple[int, ...] = (), module: str = "", outputs: int = 1, **kwargs) -> Spec:
    """A Hugging Face transformers model built from its config class (random init, nothing downloaded; eager
    attention), exported on its first output (logits or last hidden state), or on its first `outputs` outputs
    (a detector's class logits and boxes, a mask model's class and mask logits). `module` names the submodule
    that holds a class transformers does not export at top level. A nested backbone config is given as a dict
    with its `model_type` (the config class builds it; `use_pretrained_backbone=False` where the class has it)."""
    def make():
        import importlib

        import torch
        import transformers

        class First(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *args):
                out = self.inner(*args, return_dict=False)
                return out[0] if outputs == 1 else tuple(out[:outputs])

        cfg = getattr(transformers, config)(**kwargs)
        cfg._attn_implementation = "eager"
        owner = importlib.import_module(f"transformers.{module}") if module else transformers
        return First(getattr(owner, model)(cfg))

    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    where = f"transformers.{module}" if module else "transformers"
    first = "[0]" if outputs == 1 else f"[:{outputs}]"
    return Spec(name, family, "transformers", f"{where}.{model}(transformers.{config}({args}), eager attention){first}",
                make, tuple(inputs), exporter, opset, int_inputs)


def _wave6() -> Iterator[Spec]:
    """Sixth wave: Hugging Face transformers architectures (small random-initialised configs with realistic head
    dims and token counts), held out by family: transformers/vision, transformers/audio and transformers/text are
    new families, so the placement benchmark scores them as held out. Text models take int64 token ids."""
    vis, aud, txt = "transformers/vision", "transformers/audio", "transformers/text"
    img = [(1, 3, 224, 224)]
    yield _hf("hf_vit", vis, "ViTForImageClassification", "ViTConfig", img, hidden_size=192, num_hidden_layers=4,
              num_attention_heads=3, intermediate_size=768, num_labels=10)
    yield _hf("hf_deit_distilled", vis, "DeiTForImageClassificationWithTeacher", "DeiTConfig", img, hidden_size=192,
              num_hidden_layers=4, num_attention_heads=3, intermediate_size=768, num_labels=10)
    yield _hf("hf_beit", vis, "BeitForImageClassification", "BeitConfig", img, hidden_size=192, num_hidden_layers=4,
              num_attention_heads=3, intermediate_size=768, use_relative_position_bias=True,
              use_mean_pooling=True, layer_scale_init_value=0.1, num_labels=10)
    yield _hf("hf_dinov2", vis, "Dinov2Model", "Dinov2Config", img, hidden_size=192, num_hidden_layers=4,
              num_attention_heads=3, patch_size=14, image_size=224)
    yield _hf("hf_swin", vis, "SwinForImageClassification", "SwinConfig", img, embed_dim=64, depths=[2, 2, 2, 2],
              num_heads=[2, 4, 8, 16], window_size=7, num_labels=10)
    yield _hf("hf_convnextv2", vis, "ConvNextV2ForImageClassification", "ConvNextV2Config", img,
              hidden_sizes=[48, 96, 192, 384], depths=[1, 1, 3, 1], num_labels=10)
    yield _hf("hf_mobilevit", vis, "MobileViTForImageClassification", "MobileViTConfig", [(1, 3, 256, 256)],
              hidden_sizes=[64, 80, 96], neck_hidden_sizes=[16, 16, 24, 48, 64, 80, 320], num_labels=10)
    yield _hf("hf_segformer", vis, "SegformerForSemanticSegmentation", "SegformerConfig", [(1, 3, 256, 256)],
              depths=[1, 1, 1, 1], hidden_sizes=[32, 64, 160, 256], num_attention_heads=[1, 2, 5, 8],
              decoder_hidden_size=128, num_labels=19)
    yield _hf("hf_levit", vis, "LevitForImageClassification", "LevitConfig", img, hidden_sizes=[128, 256, 384],
              num_attention_heads=[4, 6, 8], depths=[2, 2, 2], key_dim=[16, 16, 16], num_labels=10)
    yield _hf("hf_wav2vec2", aud, "Wav2Vec2Model", "Wav2Vec2Config", [(1, 16000)], hidden_size=256,
              num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024, num_conv_pos_embeddings=128,
              num_conv_pos_embedding_groups=16)
    yield _hf("hf_whisper_encoder", aud, "WhisperEncoder", "WhisperConfig", [(1, 80, 3000)],
              module="models.whisper.modeling_whisper", d_model=256, encoder_layers=2, encoder_attention_heads=4,
              encoder_ffn_dim=1024, decoder_layers=1, decoder_attention_heads=4, decoder_ffn_dim=1024)
    yield _hf("hf_ast", aud, "ASTForAudioClassification", "ASTConfig", [(1, 256, 128)], hidden_size=192,
              num_hidden_layers=2, num_attention_heads=3, intermediate_size=768, max_length=256, num_labels=10)
    vocab = 8000
    ids = [(1, 128)]
    yield _hf("hf_bert", txt, "BertModel", "BertConfig", ids, int_inputs=(vocab,), vocab_size=vocab,
              hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024)
    yield _hf("hf_roberta", txt, "RobertaModel", "RobertaConfig", ids, int_inputs=(vocab,), vocab_size=vocab,
              hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024)
    yield _hf("hf_gpt2", txt, "GPT2LMHeadModel", "GPT2Config", ids, int_inputs=(vocab,), vocab_size=vocab,
              n_embd=256, n_layer=2, n_head=4, n_positions=256)
    yield _hf("hf_t5_encoder", txt, "T5EncoderModel", "T5Config", ids, int_inputs=(vocab,), vocab_size=vocab,
              d_model=256, d_kv=64, d_ff=1024, num_layers=2, num_heads=4)


def _smp(name: str, arch: str, encoder: str, size: int = 256, classes: int = 12) -> Spec:
    """A segmentation_models_pytorch model: an encoder (random init) and its decoder, logits at input size."""
    def make():
        import segmentation_models_pytorch as smp

        return getattr(smp, arch)(encoder_name=encoder, encoder_weights=None, classes=classes)

    return Spec(name, "smp/segmentation", "segmentation_models_pytorch",
                f"segmentation_models_pytorch.{arch}(encoder_name={encoder!r}, encoder_weights=None, classes={classes})",
                make, ((1, 3, size, size),))


def _monai(name: str, net: str, shape, **kwargs) -> Spec:
    def make():
        from monai.networks import nets

        return getattr(nets, net)(**kwargs)

    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return Spec(name, "monai/segmentation", "monai", f"monai.networks.nets.{net}({args})", make, (shape,))


def _kornia(name: str, call: str, build: Callable[[], object], shape) -> Spec:
    return Spec(name, "kornia/feature", "kornia", call, build, (shape,))


def _kornia_keynet():
    import kornia

    return kornia.feature.KeyNet(pretrained=False)


def _kornia_disk_unet():
    import kornia

    return kornia.feature.DISK().unet  # DISK's network; its forward's keypoint NMS is data-dependent


def _wave7() -> Iterator[Spec]:
    """Seventh wave: task models from libraries and task kinds the corpus lacked, held out by family (none of
    transformers/detection, transformers/dense, smp/segmentation, monai/segmentation, kornia/feature is a
    derive family): DETR-style detectors with small ResNet backbones (their class logits and boxes, no
    post-processing), depth / segmentation / matting / super-resolution heads on small backbones, encoder-decoder
    segmentation networks from segmentation_models_pytorch and MONAI (2-D), and two kornia feature networks."""
    det, dense = "transformers/detection", "transformers/dense"
    r18 = {"model_type": "resnet", "embedding_size": 64, "hidden_sizes": [64, 128, 256, 512], "depths": [2, 2, 2, 2],
           "layer_type": "basic"}
    c5 = dict(r18, out_features=["stage4"])
    c345 = dict(r18, out_features=["stage2", "stage3", "stage4"])
    detr = dict(use_timm_backbone=False, use_pretrained_backbone=False, encoder_layers=2, decoder_layers=2,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=512, decoder_ffn_dim=512,
                num_queries=50, num_labels=10)
    img320 = [(1, 3, 320, 320)]
    yield _hf("hf_detr", det, "DetrForObjectDetection", "DetrConfig", img320, outputs=2, backbone_config=c5,
              d_model=128, **detr)
    yield _hf("hf_conditional_detr", det, "ConditionalDetrForObjectDetection", "ConditionalDetrConfig", img320,
              outputs=2, backbone_config=c5, d_model=128, **detr)
    yield _hf("hf_dab_detr", det, "DabDetrForObjectDetection", "DabDetrConfig", img320, outputs=2,
              backbone_config=c5, hidden_size=128, **detr)
    yield _hf("hf_deformable_detr", det, "DeformableDetrForObjectDetection", "DeformableDetrConfig", img320,
              outputs=2, backbone_config=c345, d_model=128, num_feature_levels=4, **detr)
    yield _hf("hf_yolos", det, "YolosForObjectDetection", "YolosConfig", img320, outputs=2, hidden_size=192,
              num_hidden_layers=4, num_attention_heads=3, intermediate_size=768, image_size=[320, 320],
              num_detection_tokens=20, num_labels=10)
    yield _hf("hf_rt_detr", det, "RTDetrForObjectDetection", "RTDetrConfig", img320, outputs=2,
              backbone_config=dict(c345, model_type="rt_detr_resnet"), encoder_in_channels=[128, 256, 512],
              decoder_in_channels=[128, 128, 128], d_model=128, encoder_hidden_dim=128, encoder_ffn_dim=512,
              decoder_layers=2, decoder_ffn_dim=512, num_queries=100, num_labels=10)
    img = [(1, 3, 224, 224)]
    vit = dict(hidden_size=192, num_hidden_layers=4, num_attention_heads=3)
    yield _hf("hf_dpt", dense, "DPTForDepthEstimation", "DPTConfig", img, **vit, intermediate_size=768,
              image_size=224, backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[48, 96, 192, 384],
              fusion_hidden_size=64)
    yield _hf("hf_depth_anything", dense, "DepthAnythingForDepthEstimation", "DepthAnythingConfig", img,
              backbone_config=dict(vit, model_type="dinov2", patch_size=14, image_size=224, out_indices=[1, 2, 3, 4],
                                   reshape_hidden_states=False),
              reassemble_hidden_size=192, neck_hidden_sizes=[48, 96, 192, 384], fusion_hidden_size=64,
              head_hidden_size=32)
    yield _hf("hf_glpn", dense, "GLPNForDepthEstimation", "GLPNConfig", [(1, 3, 256, 256)], depths=[1, 1, 1, 1],
              hidden_sizes=[32, 64, 160, 256], num_attention_heads=[1, 2, 5, 8], decoder_hidden_size=32)
    # its pyramid pooling (scales 1, 2, 3, 6) needs the last feature map's side to be a multiple of 6
    yield _hf("hf_upernet_convnext", dense, "UperNetForSemanticSegmentation", "UperNetConfig", [(1, 3, 384, 384)],
              backbone_config={"model_type": "convnext", "hidden_sizes": [48, 96, 192, 384], "depths": [1, 1, 3, 1],
                               "out_features": ["stage1", "stage2", "stage3", "stage4"]},
              hidden_size=128, auxiliary_in_channels=192, auxiliary_channels=64, num_labels=19)
    yield _hf("hf_mask2former_swin", dense, "Mask2FormerForUniversalSegmentation", "Mask2FormerConfig", img,
              outputs=2, backbone_config={"model_type": "swin", "embed_dim": 48, "depths": [1, 1, 2, 1],
                                          "num_heads": [2, 4, 8, 16], "window_size": 7,
                                          "out_features": ["stage1", "stage2", "stage3", "stage4"]},
              feature_size=128, mask_feature_size=128, hidden_dim=128, encoder_feedforward_dim=512, encoder_layers=2,
              decoder_layers=3, num_attention_heads=4, dim_feedforward=512, num_queries=50, num_labels=10)
    yield _hf("hf_vitmatte", dense, "VitMatteForImageMatting", "VitMatteConfig", [(1, 4, 224, 224)],
              backbone_config=dict(vit, model_type="vitdet", intermediate_size=768, num_channels=4, image_size=224,
                                   pretrain_image_size=224, out_features=["stage4"]),
              hidden_size=192, convstream_hidden_sizes=[48, 96, 192], fusion_hidden_sizes=[128, 64, 32, 16])
    yield _hf("hf_swin2sr", dense, "Swin2SRForImageSuperResolution", "Swin2SRConfig", [(1, 3, 64, 64)],
              image_size=64, embed_dim=60, depths=[2, 2], num_heads=[6, 6], window_size=8, upscale=2,
              upsampler="pixelshuffledirect")
    yield _smp("smp_unet_resnet18", "Unet", "resnet18")
    yield _smp("smp_unetplusplus_resnet18", "UnetPlusPlus", "resnet18")
    yield _smp("smp_fpn_mobilenet_v2", "FPN", "mobilenet_v2")
    yield _smp("smp_pspnet_resnet34", "PSPNet", "resnet34", size=384)  # pooling scales 1, 2, 3, 6 of a 48x48 map
    yield _smp("smp_deeplabv3plus_efficientnet_b0", "DeepLabV3Plus", "efficientnet-b0")
    yield _smp("smp_linknet_resnet18", "Linknet", "resnet18")
    yield _smp("smp_manet_resnet18", "MAnet", "resnet18")
    ct = (1, 1, 256, 256)
    yield _monai("monai_unet", "UNet", ct, spatial_dims=2, in_channels=1, out_channels=2,
                 channels=(16, 32, 64, 128, 256), strides=(2, 2, 2, 2), num_res_units=2)
    yield _monai("monai_attention_unet", "AttentionUnet", ct, spatial_dims=2, in_channels=1, out_channels=2,
                 channels=(16, 32, 64, 128), strides=(2, 2, 2))
    yield _monai("monai_segresnet", "SegResNet", ct, spatial_dims=2, in_channels=1, out_channels=2, init_filters=16)
    yield _kornia("kornia_keynet", "kornia.feature.KeyNet(pretrained=False)", _kornia_keynet, (1, 1, 240, 320))
    yield _kornia("kornia_disk_unet", "kornia.feature.DISK().unet", _kornia_disk_unet, (1, 3, 256, 256))


def _diffusers(name: str, cls: str, inputs, mode: str, call_note: str, exporter: str = "torchscript", opset: int = 17,
               **kwargs) -> Spec:
    """A diffusers model built from its config arguments (random init, nothing downloaded), wrapped so that the
    graph has only tensor inputs: a denoiser's timestep (and DiT's class label) is a fixed constant in the graph,
    so its sinusoidal embedding folds to a constant at export. `mode` picks the forward: `denoise` (sample ->
    noise prediction), `cond` (sample, text states), `sd3` (sample, text states, pooled text), `pixart` (sample, text states), `controlnet` (sample, text states, conditioning image -> every residual),
    `dit` (sample,
    class label 3), `encode` (the VAE's posterior mean), `decode` (latents -> image), `forward` (the model's
    own forward, first output)."""
    def make():
        import diffusers
        import torch

        class Wrap(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *args):
                t = torch.tensor([500])
                if mode == "denoise":
                    return self.inner(args[0], t, return_dict=False)[0]
                if mode == "cond":
                    return self.inner(args[0], t, encoder_hidden_states=args[1], return_dict=False)[0]
                if mode == "sd3":
                    return self.inner(args[0], encoder_hidden_states=args[1], pooled_projections=args[2],
                                      timestep=t, return_dict=False)[0]
                if mode == "controlnet":
                    down, mid = self.inner(args[0], t, encoder_hidden_states=args[1], controlnet_cond=args[2],
                                           return_dict=False)
                    return (*down, mid)
                if mode == "pixart":
                    return self.inner(args[0], encoder_hidden_states=args[1], timestep=t,
                                      added_cond_kwargs={"resolution": None, "aspect_ratio": None},
                                      return_dict=False)[0]
                if mode == "dit":
                    return self.inner(args[0], timestep=t, class_labels=torch.tensor([3]), return_dict=False)[0]
                if mode == "encode":
                    return self.inner.encode(args[0], return_dict=False)[0].mode()
                if mode == "decode":
                    return self.inner.decode(args[0], return_dict=False)[0]
                return self.inner(*args, return_dict=False)[0]

        return Wrap(getattr(diffusers, cls)(**kwargs))

    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return Spec(name, "diffusers/generative", "diffusers", f"diffusers.{cls}({args}) {call_note}", make,
                tuple(inputs), exporter, opset)


def _wave8() -> Iterator[Spec]:
    """Eighth wave: architecture families the corpus lacked, held out by family (none of diffusers/generative,
    transformers/video, transformers/timeseries, transformers/multimodal, transformers/promptable,
    transformers/pose is a derive family): diffusion denoisers, a ControlNet and autoencoders from diffusers (a
    fixed timestep as a constant), video transformers (and a video-text model), time-series forecasters,
    image-text dual encoders and open-vocabulary heads (int64 token ids and an image), Segment Anything with one
    point prompt, and a top-down pose estimator. Small random-initialised configs, static shapes."""
    g8 = dict(norm_num_groups=8)
    yield _diffusers("diffusers_unet2d", "UNet2DModel", [(1, 3, 64, 64)], "denoise",
                     "(sample, timestep 500)[0]", sample_size=64, in_channels=3, out_channels=3,
                     block_out_channels=(32, 64, 64), layers_per_block=1,
                     down_block_types=("DownBlock2D", "AttnDownBlock2D", "DownBlock2D"),
                     up_block_types=("UpBlock2D", "AttnUpBlock2D", "UpBlock2D"), attention_head_dim=8, **g8)
    yield _diffusers("diffusers_unet2d_condition", "UNet2DConditionModel", [(1, 4, 32, 32), (1, 16, 64)], "cond",
                     "(sample, timestep 500, encoder_hidden_states)[0]", sample_size=32, in_channels=4,
                     out_channels=4, block_out_channels=(32, 64), layers_per_block=1,
                     down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                     up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=64,
                     attention_head_dim=8, **g8)
    yield _diffusers("diffusers_controlnet", "ControlNetModel", [(1, 4, 32, 32), (1, 16, 64), (1, 3, 256, 256)],
                     "controlnet", "(sample, timestep 500, encoder_hidden_states, controlnet_cond): down and mid residuals",
                     in_channels=4, block_out_channels=(32, 64), layers_per_block=1,
                     down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), cross_attention_dim=64,
                     attention_head_dim=8, conditioning_embedding_out_channels=(16, 32, 64, 128), **g8)
    vae = dict(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64, 64, 64),
               down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
               layers_per_block=1, sample_size=128, **g8)
    yield _diffusers("diffusers_autoencoderkl_encoder", "AutoencoderKL", [(1, 3, 128, 128)], "encode",
                     ".encode(image).latent_dist.mode()", **vae)
    yield _diffusers("diffusers_autoencoderkl_decoder", "AutoencoderKL", [(1, 4, 16, 16)], "decode",
                     ".decode(latents)[0]", **vae)
    yield _diffusers("diffusers_vqmodel", "VQModel", [(1, 3, 64, 64)], "forward", "(image)[0]: encode, quantize, decode",
                     in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64),
                     down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                     layers_per_block=1, num_vq_embeddings=256, vq_embed_dim=4, sample_size=64, **g8)
    yield _diffusers("diffusers_autoencoder_tiny_decoder", "AutoencoderTiny", [(1, 4, 32, 32)], "decode",
                     ".decode(latents)[0]", encoder_block_out_channels=(32, 32, 32, 32),
                     decoder_block_out_channels=(32, 32, 32, 32))
    yield _diffusers("diffusers_dit", "DiTTransformer2DModel", [(1, 4, 16, 16)], "dit",
                     "(sample, timestep 500, class_labels 3)[0]", num_attention_heads=4, attention_head_dim=32,
                     in_channels=4, out_channels=8, num_layers=4, sample_size=16, patch_size=2, num_embeds_ada_norm=10)
    yield _diffusers("diffusers_sd3_transformer", "SD3Transformer2DModel", [(1, 4, 32, 32), (1, 16, 64), (1, 32)],
                     "sd3", "(sample, encoder_hidden_states, pooled_projections, timestep 500)[0]", sample_size=32,
                     patch_size=2, in_channels=4, out_channels=4, num_layers=2, attention_head_dim=32,
                     num_attention_heads=4, joint_attention_dim=64, caption_projection_dim=128,
                     pooled_projection_dim=32, pos_embed_max_size=32)
    yield _diffusers("diffusers_pixart_transformer", "PixArtTransformer2DModel", [(1, 4, 16, 16), (1, 16, 64)],
                     "pixart", "(sample, encoder_hidden_states, timestep 500)[0]", num_attention_heads=4,
                     attention_head_dim=32, in_channels=4, out_channels=8, num_layers=2, sample_size=16, patch_size=2,
                     cross_attention_dim=128, caption_channels=64, use_additional_conditions=False)
    # its resampling convolves with a kernel built at run time, which only the dynamo exporter folds
    yield _diffusers("diffusers_unet1d_dynamo", "UNet1DModel", [(1, 2, 1024)], "denoise", "(sample, timestep 500)[0]",
                     exporter="dynamo", opset=18,
                     sample_size=1024, in_channels=2, out_channels=2, extra_in_channels=16,
                     time_embedding_dim=16, block_out_channels=(32, 32, 64))
    video = "transformers/video"
    clip8 = [(1, 8, 3, 112, 112)]
    vit = dict(hidden_size=192, num_hidden_layers=4, num_attention_heads=3, intermediate_size=768)
    yield _hf("hf_videomae", video, "VideoMAEForVideoClassification", "VideoMAEConfig", clip8, **vit,
              image_size=112, patch_size=16, num_frames=8, tubelet_size=2, num_labels=10)
    yield _hf("hf_timesformer", video, "TimesformerForVideoClassification", "TimesformerConfig", clip8, **vit,
              image_size=112, patch_size=16, num_frames=8, num_labels=10)
    yield _hf("hf_vivit", video, "VivitForVideoClassification", "VivitConfig", [(1, 8, 3, 112, 112)], **vit,
              image_size=112, num_frames=8, tubelet_size=[2, 16, 16], num_labels=10)
    yield _hf("hf_vjepa2", video, "VJEPA2ForVideoClassification", "VJEPA2Config", [(1, 8, 3, 112, 112)], hidden_size=192,
              num_hidden_layers=4, num_attention_heads=3, mlp_ratio=4.0, crop_size=112, frames_per_clip=8,
              tubelet_size=2, patch_size=16, pred_hidden_size=96, pred_num_hidden_layers=2,
              pred_num_attention_heads=3, pred_num_mask_tokens=2, num_pooler_layers=1, num_labels=10)
    yield _hf("hf_xclip", video, "XCLIPModel", "XCLIPConfig", [(1, 16), (1, 8, 3, 112, 112)], int_inputs=(1000, 0),
              text_config={"vocab_size": 1000, "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
                           "intermediate_size": 1024, "max_position_embeddings": 16},
              vision_config=dict(vit, image_size=112, patch_size=16, num_frames=8, mit_hidden_size=128,
                                 mit_intermediate_size=512, mit_num_attention_heads=4),
              projection_dim=128, prompt_layers=1, prompt_num_attention_heads=4)
    ts = "transformers/timeseries"
    # TorchScript's export of their patching (Tensor.unfold) gives a file that fails ONNX shape inference
    yield _hf("hf_patchtst_dynamo", ts, "PatchTSTForPrediction", "PatchTSTConfig", [(1, 512, 7)], exporter="dynamo",
              opset=18, num_input_channels=7,
              context_length=512, patch_length=16, patch_stride=8, prediction_length=96, d_model=128,
              num_hidden_layers=2, num_attention_heads=4, ffn_dim=256)
    yield _hf("hf_patchtsmixer_dynamo", ts, "PatchTSMixerForPrediction", "PatchTSMixerConfig", [(1, 512, 7)],
              exporter="dynamo", opset=18,
              num_input_channels=7, context_length=512, patch_length=16, patch_stride=8, prediction_length=96,
              d_model=64, num_layers=4, mode="mix_channel", gated_attn=True)
    mm = "transformers/multimodal"
    vocab = 1000
    text = {"vocab_size": vocab, "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 1024, "max_position_embeddings": 16}
    vision = {"hidden_size": 192, "num_hidden_layers": 4, "num_attention_heads": 3, "intermediate_size": 768,
              "image_size": 224, "patch_size": 16}
    pair = [(1, 16), (1, 3, 224, 224)]
    yield _hf("hf_clip", mm, "CLIPModel", "CLIPConfig", pair, int_inputs=(vocab, 0), text_config=text,
              vision_config=vision, projection_dim=128)
    yield _hf("hf_siglip", mm, "SiglipModel", "SiglipConfig", pair, int_inputs=(vocab, 0),
              text_config=dict(text, projection_size=192), vision_config=vision)
    yield _hf("hf_clipseg", mm, "CLIPSegForImageSegmentation", "CLIPSegConfig", pair, int_inputs=(vocab, 0),
              text_config=text, vision_config=vision, projection_dim=128, extract_layers=[1, 2, 3], reduce_dim=64)
    yield _hf("hf_owlvit", mm, "OwlViTForObjectDetection", "OwlViTConfig", [(2, 16), (1, 3, 224, 224)],
              int_inputs=(vocab, 0), outputs=2, text_config=text, vision_config=vision, projection_dim=256)
    yield _hf("hf_sam", "transformers/promptable", "SamModel", "SamConfig", [(1, 3, 256, 256), (1, 1, 1, 2)],
              outputs=2, vision_config={"hidden_size": 192, "num_hidden_layers": 4, "num_attention_heads": 3,
                                        "mlp_dim": 768, "image_size": 256, "patch_size": 16, "output_channels": 64,
                                        "window_size": 4, "global_attn_indexes": [1, 3], "num_pos_feats": 32,
                                        "initializer_range": 0.02},
              prompt_encoder_config={"hidden_size": 64, "image_size": 256, "patch_size": 16,
                                     "mask_input_channels": 16},
              mask_decoder_config={"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "mlp_dim": 256,
                                   "iou_head_hidden_dim": 64})
    yield _hf("hf_vitpose", "transformers/pose", "VitPoseForPoseEstimation", "VitPoseConfig", [(1, 3, 256, 192)],
              backbone_config={"model_type": "vitpose_backbone", "hidden_size": 192, "num_hidden_layers": 4,
                               "num_attention_heads": 3, "intermediate_size": 768, "image_size": [256, 192],
                               "patch_size": [16, 16], "out_indices": [4]}, use_simple_decoder=True, num_labels=17)


def _wavenet():
    import torch

    class Block(torch.nn.Module):
        def __init__(self, c, dilation):
            super().__init__()
            self.pad = dilation
            self.conv = torch.nn.Conv1d(c, 2 * c, 2, dilation=dilation)
            self.res, self.skip = torch.nn.Conv1d(c, c, 1), torch.nn.Conv1d(c, c, 1)

        def forward(self, x):
            a, b = self.conv(torch.nn.functional.pad(x, (self.pad, 0))).chunk(2, 1)
            y = torch.tanh(a) * torch.sigmoid(b)
            return x + self.res(y), self.skip(y)

    class M(torch.nn.Module):
        def __init__(self, c=32):
            super().__init__()
            self.blocks = torch.nn.ModuleList([Block(c, 2 ** i) for i in range(6)])
            self.out = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Conv1d(c, c, 1), torch.nn.ReLU(),
                                           torch.nn.Conv1d(c, 16, 1))

        def forward(self, x):
            total = 0
            for block in self.blocks:
                x, s = block(x)
                total = total + s
            return self.out(total)

    return M().eval()


def _pointnet():
    import torch

    def mlp(*dims):
        layers = []
        for a, b in itertools.pairwise(dims):
            layers += [torch.nn.Conv1d(a, b, 1), torch.nn.BatchNorm1d(b), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.t_feat, self.t_fc = mlp(3, 64, 128), torch.nn.Linear(128, 9)
            self.feat = mlp(3, 64, 128, 256)
            self.head = torch.nn.Sequential(torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))

        def forward(self, x):
            t = self.t_fc(self.t_feat(x).max(2)[0]).reshape(-1, 3, 3) + torch.eye(3)
            x = torch.bmm(t, x)
            return self.head(self.feat(x).max(2)[0])

    return M().eval()


def _convtasnet():
    import torch

    class Block(torch.nn.Module):
        def __init__(self, c, h, dilation):
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Conv1d(c, h, 1), torch.nn.PReLU(), torch.nn.GroupNorm(1, h),
                torch.nn.Conv1d(h, h, 3, padding=dilation, dilation=dilation, groups=h), torch.nn.PReLU(),
                torch.nn.GroupNorm(1, h), torch.nn.Conv1d(h, c, 1))

        def forward(self, x):
            return x + self.net(x)

    class M(torch.nn.Module):
        def __init__(self, n=64, c=32, h=64, speakers=2):
            super().__init__()
            self.speakers = speakers
            self.enc = torch.nn.Conv1d(1, n, 16, stride=8, bias=False)
            self.norm, self.bottleneck = torch.nn.GroupNorm(1, n), torch.nn.Conv1d(n, c, 1)
            self.blocks = torch.nn.Sequential(*[Block(c, h, 2 ** i) for i in range(4)])
            self.mask = torch.nn.Conv1d(c, speakers * n, 1)
            self.dec = torch.nn.ConvTranspose1d(n, 1, 16, stride=8, bias=False)

        def forward(self, x):
            w = torch.relu(self.enc(x))
            m = torch.sigmoid(self.mask(self.blocks(self.bottleneck(self.norm(w)))))
            m = m.reshape(m.shape[0], self.speakers, -1, m.shape[-1])
            y = (w.unsqueeze(1) * m).reshape(-1, w.shape[1], w.shape[2])
            return self.dec(y).reshape(x.shape[0], self.speakers, -1)

    return M().eval()


def _moe():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=128, experts=4, k=2):
            super().__init__()
            self.k = k
            self.norm, self.router = torch.nn.LayerNorm(d), torch.nn.Linear(d, experts, bias=False)
            self.experts = torch.nn.ModuleList(
                [torch.nn.Sequential(torch.nn.Linear(d, 2 * d), torch.nn.GELU(), torch.nn.Linear(2 * d, d))
                 for _ in range(experts)])

        def forward(self, x):
            y = self.norm(x)
            score, index = self.router(y).topk(self.k, -1)
            gate = torch.zeros_like(self.router(y)).scatter(-1, index, score.softmax(-1))
            out = torch.stack([e(y) for e in self.experts], -1)
            return x + (out * gate.unsqueeze(-2)).sum(-1)

    return M().eval()


def _kv_step():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=128, heads=4):
            super().__init__()
            self.h = heads
            self.norm, self.qkv, self.o = torch.nn.LayerNorm(d), torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.ff = torch.nn.Sequential(torch.nn.LayerNorm(d), torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                          torch.nn.Linear(4 * d, d))

        def forward(self, x, past_k, past_v):
            b, n, c = x.shape
            q, k, v = self.qkv(self.norm(x)).reshape(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
            a = (q @ k.transpose(-1, -2) * (c // self.h) ** -0.5).softmax(-1)
            x = x + self.o((a @ v).transpose(1, 2).reshape(b, n, c))
            return x + self.ff(x), k, v

    return M().eval()


def _roi_align():
    import torch
    import torchvision

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, 2, 1), torch.nn.ReLU(),
                                            torch.nn.Conv2d(32, 64, 3, 2, 1), torch.nn.ReLU())
            self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64 * 49, 128), torch.nn.ReLU(),
                                            torch.nn.Linear(128, 5))

        def forward(self, x, boxes):
            # boxes per image, as detectors pass them: the batch-index column is built in the graph
            return self.head(torchvision.ops.roi_align(self.body(x), [boxes], (7, 7), 0.25, 2, aligned=True))

    return M().eval()


def _convlstm():
    import torch

    class M(torch.nn.Module):
        def __init__(self, c=8, h=16):
            super().__init__()
            self.h = h
            self.gates = torch.nn.Conv2d(c + h, 4 * h, 3, padding=1)
            self.head = torch.nn.Conv2d(h, 1, 1)

        def forward(self, x):
            b, t, _, height, width = x.shape
            hidden = x.new_zeros(b, self.h, height, width)
            cell = torch.zeros_like(hidden)
            for step in range(t):
                i, f, g, o = self.gates(torch.cat([x[:, step], hidden], 1)).chunk(4, 1)
                cell = torch.sigmoid(f) * cell + torch.sigmoid(i) * torch.tanh(g)
                hidden = torch.sigmoid(o) * torch.tanh(cell)
            return self.head(hidden)

    return M().eval()


def _einsum_attention():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=48, heads=4):
            super().__init__()
            self.h = heads
            self.stem = torch.nn.Sequential(torch.nn.PixelUnshuffle(4), torch.nn.Conv2d(48, d, 1))
            self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.head = torch.nn.Linear(d, 10)

        def forward(self, x):
            y = self.stem(x).flatten(2).transpose(1, 2)
            b, n, c = y.shape
            q, k, v = self.qkv(y).reshape(b, n, 3, self.h, c // self.h).unbind(2)
            a = torch.einsum("bqhd,bkhd->bhqk", q, k).mul((c // self.h) ** -0.5).softmax(-1)
            y = y + self.o(torch.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, n, c))
            return self.head(y.mean(1))

    return M().eval()


def _attention(q, k, v, heads: int):
    """Multi-head attention by MatMul and Softmax on (batch, tokens, dim) tensors (no fused op to export)."""
    b, n, c = q.shape
    m = k.shape[1]
    q = q.reshape(b, n, heads, c // heads).transpose(1, 2)
    k = k.reshape(b, m, heads, c // heads).transpose(1, 2)
    v = v.reshape(b, m, heads, c // heads).transpose(1, 2)
    a = (q @ k.transpose(-1, -2) * (c // heads) ** -0.5).softmax(-1)
    return (a @ v).transpose(1, 2).reshape(b, n, c)


def _perceiver():
    import torch

    class Layer(torch.nn.Module):
        def __init__(self, d, kv_dim):
            super().__init__()
            self.nq, self.nkv, self.nf = torch.nn.LayerNorm(d), torch.nn.LayerNorm(kv_dim), torch.nn.LayerNorm(d)
            self.q, self.k, self.v = torch.nn.Linear(d, d), torch.nn.Linear(kv_dim, d), torch.nn.Linear(kv_dim, d)
            self.o = torch.nn.Linear(d, d)
            self.ff = torch.nn.Sequential(torch.nn.Linear(d, 2 * d), torch.nn.GELU(), torch.nn.Linear(2 * d, d))

        def forward(self, x, ctx):
            c = self.nkv(ctx)
            x = x + self.o(_attention(self.q(self.nq(x)), self.k(c), self.v(c), 4))
            return x + self.ff(self.nf(x))

    class M(torch.nn.Module):
        def __init__(self, d=128, inputs=64):
            super().__init__()
            self.latents = torch.nn.Parameter(torch.randn(1, 32, d) * 0.02)
            self.cross = Layer(d, inputs)
            self.selfs = torch.nn.ModuleList([Layer(d, d), Layer(d, d)])
            self.head = torch.nn.Linear(d, 10)

        def forward(self, x):
            z = self.cross(self.latents.expand(x.shape[0], -1, -1), x)
            for layer in self.selfs:
                z = layer(z, z)
            return self.head(z.mean(1))

    return M().eval()


def _conformer_block():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=144, heads=4):
            super().__init__()

            def ffn():
                return torch.nn.Sequential(torch.nn.LayerNorm(d), torch.nn.Linear(d, 4 * d), torch.nn.SiLU(),
                                           torch.nn.Linear(4 * d, d))

            self.ff1, self.ff2 = ffn(), ffn()
            self.na = torch.nn.LayerNorm(d)
            self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
            self.conv = _conformer_conv()
            self.out = torch.nn.LayerNorm(d)

        def forward(self, x):
            x = x + 0.5 * self.ff1(x)
            y = self.na(x)
            x = x + self.attn(y, y, y, need_weights=False)[0]
            x = self.conv(x)
            return self.out(x + 0.5 * self.ff2(x))

    return M().eval()


def _rope_swiglu():
    import torch

    class RMSNorm(torch.nn.Module):  # written out: aten::rms_norm has no TorchScript-exporter symbolic
        def __init__(self, d):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    class M(torch.nn.Module):
        def __init__(self, d=256, heads=8, tokens=64):
            super().__init__()
            self.h = heads
            hd = d // heads
            self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
            self.qkv, self.o = torch.nn.Linear(d, 3 * d, bias=False), torch.nn.Linear(d, d, bias=False)
            self.w1, self.w3 = torch.nn.Linear(d, 688, bias=False), torch.nn.Linear(d, 688, bias=False)
            self.w2 = torch.nn.Linear(688, d, bias=False)
            freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
            angle = torch.outer(torch.arange(tokens).float(), freq)
            angle = torch.cat([angle, angle], -1)
            self.register_buffer("cos", angle.cos(), persistent=False)
            self.register_buffer("sin", angle.sin(), persistent=False)
            mask = torch.full((tokens, tokens), float("-inf")).triu(1)
            self.register_buffer("mask", mask, persistent=False)

        def rope(self, x):
            half = x.shape[-1] // 2
            rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
            return x * self.cos + rotated * self.sin

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(self.n1(x)).reshape(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
            q, k = self.rope(q), self.rope(k)
            a = (q @ k.transpose(-1, -2) * (c // self.h) ** -0.5 + self.mask).softmax(-1)
            x = x + self.o((a @ v).transpose(1, 2).reshape(b, n, c))
            y = self.n2(x)
            return x + self.w2(torch.nn.functional.silu(self.w1(y)) * self.w3(y))

    return M().eval()


def _topk_tokens():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=128, keep=32):
            super().__init__()
            self.keep = keep
            self.embed = torch.nn.Conv2d(3, d, 16, 16)
            self.pos = torch.nn.Parameter(torch.randn(1, 64, d) * 0.02)
            self.score = torch.nn.Linear(d, 1)
            self.norm = torch.nn.LayerNorm(d)
            self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.head = torch.nn.Linear(d, 10)

        def forward(self, x):
            t = self.embed(x).flatten(2).transpose(1, 2) + self.pos
            idx = self.score(t).squeeze(-1).topk(self.keep, dim=1).indices
            t = torch.gather(t, 1, idx.unsqueeze(-1).expand(-1, -1, t.shape[-1]))
            q, k, v = self.qkv(self.norm(t)).chunk(3, -1)
            t = t + self.o(_attention(q, k, v, 4))
            return self.head(t.mean(1))

    return M().eval()


def _attention_unet():
    import torch

    def block(i, o):
        return torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU(),
                                   torch.nn.Conv2d(o, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU())

    class Gate(torch.nn.Module):
        def __init__(self, g, x, inner):
            super().__init__()
            self.wg, self.wx = torch.nn.Conv2d(g, inner, 1), torch.nn.Conv2d(x, inner, 1, bias=False)
            self.psi = torch.nn.Conv2d(inner, 1, 1)

        def forward(self, g, x):
            return x * torch.sigmoid(self.psi(torch.relu(self.wg(g) + self.wx(x))))

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2, self.d3, self.d4 = block(3, 16), block(16, 32), block(32, 64), block(64, 128)
            self.pool = torch.nn.MaxPool2d(2)
            self.ups = torch.nn.ModuleList([torch.nn.ConvTranspose2d(c, c // 2, 2, 2) for c in (128, 64, 32)])
            self.gates = torch.nn.ModuleList([Gate(c // 2, c // 2, c // 4) for c in (128, 64, 32)])
            self.decs = torch.nn.ModuleList([block(c, c // 2) for c in (128, 64, 32)])
            self.head = torch.nn.Conv2d(16, 3, 1)

        def forward(self, x):
            skips = [self.d1(x)]
            for down in (self.d2, self.d3, self.d4):
                skips.append(down(self.pool(skips[-1])))
            y = skips.pop()
            for up, gate, dec in zip(self.ups, self.gates, self.decs):
                g = up(y)
                s = skips.pop()
                y = dec(torch.cat([gate(g, s), g], 1))
            return self.head(y)

    return M().eval()


def _fnet():
    import torch

    class M(torch.nn.Module):
        def __init__(self, d=128):
            super().__init__()
            self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
            self.ff = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

        def forward(self, x):
            x = self.n1(x + torch.fft.fft2(x).real)
            return self.n2(x + self.ff(x))

    return M().eval()


def _hifigan():
    import torch

    class Res(torch.nn.Module):
        def __init__(self, c):
            super().__init__()
            self.convs = torch.nn.ModuleList([torch.nn.Conv1d(c, c, 3, dilation=d, padding=d) for d in (1, 3, 5)])

        def forward(self, x):
            for conv in self.convs:
                x = x + conv(torch.nn.functional.leaky_relu(x, 0.1))
            return x

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Conv1d(80, 128, 7, padding=3)
            self.up1, self.res1 = torch.nn.ConvTranspose1d(128, 64, 16, 8, padding=4), Res(64)
            self.up2, self.res2 = torch.nn.ConvTranspose1d(64, 32, 16, 8, padding=4), Res(32)
            self.post = torch.nn.Conv1d(32, 1, 7, padding=3)

        def forward(self, x):
            x = self.res1(self.up1(torch.nn.functional.leaky_relu(self.pre(x), 0.1)))
            x = self.res2(self.up2(torch.nn.functional.leaky_relu(x, 0.1)))
            return torch.tanh(self.post(torch.nn.functional.leaky_relu(x, 0.01)))

    return M().eval()


def _quartznet():
    import torch

    class Block(torch.nn.Module):
        def __init__(self, i, o, k, repeat=2):
            super().__init__()
            layers = []
            for r in range(repeat):
                c = i if r == 0 else o
                layers += [torch.nn.Conv1d(c, c, k, padding=k // 2, groups=c), torch.nn.Conv1d(c, o, 1),
                           torch.nn.BatchNorm1d(o)]
                if r < repeat - 1:
                    layers.append(torch.nn.ReLU())
            self.body = torch.nn.Sequential(*layers)
            self.skip = torch.nn.Sequential(torch.nn.Conv1d(i, o, 1), torch.nn.BatchNorm1d(o))

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Sequential(torch.nn.Conv1d(64, 64, 11, 2, 5, groups=64), torch.nn.Conv1d(64, 128, 1),
                                            torch.nn.BatchNorm1d(128), torch.nn.ReLU())
            self.blocks = torch.nn.Sequential(Block(128, 128, 13), Block(128, 160, 15), Block(160, 192, 17))
            self.head = torch.nn.Conv1d(192, 29, 1)

        def forward(self, x):
            return self.head(self.blocks(self.stem(x))).log_softmax(1)

    return M().eval()


def _gru_transformer():
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = torch.nn.GRU(64, 128, batch_first=True)
            self.layer = torch.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
            self.fc = torch.nn.Linear(128, 12)

        def forward(self, x):
            return self.fc(self.layer(self.gru(x)[0]))

    return M().eval()


def _cbam():
    import torch

    class M(torch.nn.Module):
        def __init__(self, c=64):
            super().__init__()
            self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, c, 3, 2, 1), torch.nn.BatchNorm2d(c), torch.nn.ReLU())
            self.c1, self.c2 = torch.nn.Conv2d(c, c, 3, 1, 1), torch.nn.Conv2d(c, c, 3, 1, 1)
            self.mlp = torch.nn.Sequential(torch.nn.Conv2d(c, c // 8, 1), torch.nn.ReLU(), torch.nn.Conv2d(c // 8, c, 1))
            self.spatial = torch.nn.Conv2d(2, 1, 7, padding=3)
            self.head = torch.nn.Linear(c, 10)

        def forward(self, x):
            x = self.stem(x)
            y = self.c2(torch.relu(self.c1(x)))
            y = y * torch.sigmoid(self.mlp(y.mean((2, 3), keepdim=True)) + self.mlp(y.amax((2, 3), keepdim=True)))
            s = torch.cat([y.mean(1, keepdim=True), y.amax(1, keepdim=True)], 1)
            x = torch.relu(x + y * torch.sigmoid(self.spatial(s)))
            return self.head(x.mean((2, 3)))

    return M().eval()


def _vit_tiny():
    import torch
    import torch.nn.functional as F

    class Block(torch.nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.h = heads
            self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
            self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.ff = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(self.n1(x)).reshape(b, n, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
            x = x + self.o(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c))
            return x + self.ff(self.n2(x))

    class M(torch.nn.Module):
        def __init__(self, d=192, heads=3):
            super().__init__()
            self.embed = torch.nn.Conv2d(3, d, 16, 16)
            self.cls = torch.nn.Parameter(torch.randn(1, 1, d) * 0.02)
            self.pos = torch.nn.Parameter(torch.randn(1, 37, d) * 0.02)
            self.blocks = torch.nn.Sequential(Block(d, heads), Block(d, heads))
            self.norm, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, 10)

        def forward(self, x):
            t = self.embed(x).flatten(2).transpose(1, 2)
            t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], 1) + self.pos
            return self.head(self.norm(self.blocks(t))[:, 0])

    return M().eval()


# ---- export and strip ---------------------------------------------------------------------------------------

def _revive_zero_init(model) -> int:
    """Give all-zero weights random values; returns how many parameters were changed.

    Architectures that zero-initialise the last norm of each residual branch (timm's `zero_init_last`,
    skip-init gains) export convolutions whose folded weights are all zero, and rknn-toolkit2 then prunes
    the whole branch: the layer table would describe a different network. Biases stay zero.
    """
    import torch

    generator = torch.Generator().manual_seed(2)
    count = 0
    with torch.no_grad():
        for name, param in model.named_parameters():
            if not param.is_floating_point() or param.numel() == 0 or bool(param.any()):
                continue
            if name.endswith("bias"):
                continue
            if param.dim() >= 2:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.02)
            else:
                param.fill_(1.0)
            count += 1
    return count


def _export(spec: Spec, path: Path) -> int:
    import torch

    torch.backends.mha.set_fastpath_enabled(False)  # the fused fast path has no ONNX export
    torch.manual_seed(0)
    model = spec.make()
    assert isinstance(model, torch.nn.Module), spec.name
    model.eval()
    revived = _revive_zero_init(model)
    torch.manual_seed(1)
    ints = spec.int_inputs or (0,) * len(spec.inputs)
    args = tuple(torch.randint(0, high, shape) if high else torch.randn(*shape) for shape, high in zip(spec.inputs, ints))
    names = [f"input{i}" if len(spec.inputs) > 1 else "input" for i in range(len(spec.inputs))]
    with torch.no_grad():
        model(*args)
        if spec.exporter == "dynamo":
            program = torch.onnx.export(model, args, dynamo=True, opset_version=spec.opset, input_names=names,
                                        optimize=True, verbose=False)
            program.save(str(path))
            _drop_stack_traces(path)
        else:
            torch.onnx.export(model, args, str(path), dynamo=False, opset_version=spec.opset, input_names=names,
                              do_constant_folding=True)
    return revived


def _drop_stack_traces(path: Path) -> None:
    """Remove the Python stack trace the dynamo exporter stores on every node: it holds the source file's path
    and line numbers, so the same model exported from another checkout or after an edit of this script would
    hash differently. The graph, names and other metadata are untouched."""
    import onnx

    model = onnx.load(str(path))

    def graphs(graph):
        yield graph
        for node in graph.node:
            for attr in node.attribute:
                for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    yield from graphs(sub)

    nodes = [n for g in graphs(model.graph) for n in g.node] + [n for f in model.functions for n in f.node]
    for node in nodes:
        kept = [p for p in node.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        if len(kept) != len(node.metadata_props):
            del node.metadata_props[:]
            node.metadata_props.extend(kept)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(model.SerializeToString(deterministic=True))
    tmp.replace(path)


def _is_float(data_type: int) -> bool:
    import onnx

    return data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                         onnx.TensorProto.BFLOAT16)


def _is_weight(data_type: int) -> bool:
    """Tensors that hold weights rather than shape data: floats, and the int8/uint8 weights of a pre-quantized
    (QuantizeLinear/DequantizeLinear) model."""
    import onnx

    return _is_float(data_type) or data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)


def strip(weighted: Path, out: Path) -> tuple[int, str]:
    """Write the structure-only copy; returns (number of nodes, note on what was stripped)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(weighted))
    graph = model.graph
    lifted = lifted_int = 0
    kept_nodes = []
    for node in graph.node:
        value = next((a.t for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR),
                     None)
        if node.op_type == "Constant" and value is not None and _is_weight(value.data_type) and \
                _numel(value.dims) > INLINE_MAX_FLOATS and len(node.output) == 1:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(value)
            tensor.name = node.output[0]
            graph.initializer.append(tensor)
            if _is_float(value.data_type):
                lifted += 1
            else:
                lifted_int += 1
            continue
        kept_nodes.append(node)
    if lifted or lifted_int:
        del graph.node[:]
        graph.node.extend(kept_nodes)
    location = f"{out.stem}.weights"
    offset = stripped = inline = 0
    for tensor in graph.initializer:
        if not _is_weight(tensor.data_type) or _numel(tensor.dims) <= INLINE_MAX_FLOATS:
            inline += 1
            continue
        length = numpy_helper.to_array(tensor).nbytes
        dims, dtype, name = list(tensor.dims), tensor.data_type, tensor.name
        tensor.Clear()
        tensor.name, tensor.data_type = name, dtype
        tensor.dims.extend(dims)
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        offset += length
        stripped += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(model.SerializeToString(deterministic=True))
    tmp.replace(out)
    note = f"initializers: {stripped} external-missing, {inline} inline"
    if lifted:
        note += f"; {lifted} large float Constant nodes lifted to initializers"
    if lifted_int:
        note += f"; {lifted_int} large int8/uint8 Constant nodes (quantized weights) lifted to initializers"
    return len(graph.node), note


def _numel(dims) -> int:
    count = 1
    for d in dims:
        count *= int(d)
    return count


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(path: Path = MANIFEST) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    with path.open(newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}


def architecture(name: str) -> str:
    """The architecture a file exports, without its export variant (opset, exporter, input size), so that
    counts of distinct architectures and held-out splits do not count a variant twice."""
    import re

    base = re.sub(r"(_opset\d+|_dynamo)+$", "", name)
    return re.sub(r"^(yolo\w*?)_\d+$", r"\1", base)


def write_manifest(rows: dict[str, dict[str, str]], path: Path = MANIFEST) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        for name in sorted(rows):
            writer.writerow({c: rows[name].get(c, "") for c in COLUMNS} | {"architecture": architecture(name)})
    tmp.replace(path)


def build(build_dir: Path, only: list[str] | None, failures: Path) -> int:
    import importlib.metadata as md

    import onnx
    import torch

    torch.set_num_threads(1)
    versions = {lib: md.version(lib) for lib in ("torch", "torchvision", "timm", "ultralytics", "transformers")}
    installed = {d.metadata["Name"].lower().replace("-", "_") for d in md.distributions()}
    versions.update({lib: md.version(lib) for lib in ("segmentation_models_pytorch", "monai", "kornia", "diffusers", "spandrel",
                                                 "torchaudio", "torch_geometric", "nnAudio", "pytorch_tabnet",
                                                 "snntorch", "open_clip_torch")
                     if lib.lower() in installed})  # waves 7-10's libraries, needed only to build them
    rows = read_manifest()
    failed: list[str] = []
    ordered = list(specs())
    if only:  # in the order given
        index = {name: i for i, name in enumerate(only)}
        ordered = sorted((s for s in ordered if s.name in index), key=lambda s: index[s.name])
    for spec in ordered:
        weighted = build_dir / "models" / f"{spec.name}.onnx"
        structure = CORPUS / "models" / f"{spec.name}.onnx"
        if spec.name in rows and weighted.exists() and structure.exists():
            continue
        weighted.parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        partial = weighted.with_name(weighted.name + ".partial")  # a rebuild replaces the file in one step
        try:
            revived = _export(spec, partial)
            onnx.checker.check_model(str(partial))
            nodes, note = strip(partial, structure)
            partial.replace(weighted)
            if revived:
                note += f"; {revived} all-zero initialised weights given random values (zero-init residuals)"
            if any(spec.int_inputs):
                note += "; int64 inputs (token ids): " + ", ".join(
                    f"input {i} in [0, {high})" for i, high in enumerate(spec.int_inputs) if high)
        except Exception as exc:  # an architecture that does not export is recorded, not fatal
            failed.append(f"{spec.name}\t{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}")
            print(f"FAILED {spec.name}: {failed[-1]}", file=sys.stderr, flush=True)
            partial.unlink(missing_ok=True)
            continue
        opset = next((o.version for o in onnx.load(str(structure), load_external_data=False).opset_import
                      if o.domain in ("", "ai.onnx")), spec.opset)
        rows[spec.name] = {
            "name": spec.name, "family": spec.family,
            "source": f"{spec.library} {versions.get(spec.library, torch.__version__)}; torch {torch.__version__}",
            "call": spec.call,
            "exporter": f"torch.onnx.export(dynamo={spec.exporter == 'dynamo'})",
            "opset": str(opset),
            "input_shapes": ";".join("x".join(map(str, s)) for s in spec.inputs),
            "num_nodes": str(nodes),
            "sha256_structure": _sha256(structure), "sha256_weighted": _sha256(weighted),
            "weighted_bytes": str(weighted.stat().st_size), "structure_bytes": str(structure.stat().st_size),
            "edgeplan_load": rows.get(spec.name, {}).get("edgeplan_load", ""),
            "notes": note,
        }
        current = read_manifest()  # another run (--verify) may have written since we read it
        current[spec.name] = rows[spec.name]
        write_manifest(current)
        print(f"built {spec.name} ({nodes} nodes, {time.monotonic() - start:.1f} s)", file=sys.stderr, flush=True)
    if failed:
        with failures.open("a") as handle:
            handle.write("\n".join(failed) + "\n")
    return 0


def reproduce(names: list[str]) -> int:
    """Rebuild the named models in a temporary folder and compare both hashes with the manifest's: the
    manifest's claim that a rebuild is byte-identical, checked. Exit 1 on any difference."""
    import tempfile

    import torch

    torch.set_num_threads(1)
    rows = read_manifest()
    by_name = {s.name: s for s in specs()}
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if name not in rows or name not in by_name:
                print(f"{name}: not a built spec in the manifest", file=sys.stderr)
                differ += 1
                continue
            weighted, structure = Path(tmp) / f"{name}.weighted.onnx", Path(tmp) / name / f"{name}.onnx"
            _export(by_name[name], weighted)
            strip(weighted, structure)
            same = (_sha256(weighted) == rows[name]["sha256_weighted"],
                    _sha256(structure) == rows[name]["sha256_structure"])
            differ += not all(same)
            print(f"{name}: weighted {'same' if same[0] else 'DIFFERS'}, structure {'same' if same[1] else 'DIFFERS'}",
                  file=sys.stderr, flush=True)
    return 1 if differ else 0


def verify(target: str, only: set[str] | None = None) -> int:
    """Run `edgeplan check` (its CLI entry point, in this process: one import for all models) on every
    committed model not yet verified; a load error is recorded, not hidden."""
    import contextlib
    import io

    from optimizer.cli import main as edgeplan

    rows = read_manifest()
    for name, row in sorted(rows.items()):
        if (only and name not in only) or (not only and row.get("edgeplan_load")):
            continue
        path = CORPUS / "models" / f"{name}.onnx"
        if not path.exists():
            continue
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = edgeplan(["check", str(path), "--target", target])
        lines = err.getvalue().strip().splitlines()
        row["edgeplan_load"] = "ok" if code == 0 else f"exit {code}: " + (lines[-1] if lines else "")[:300]
        print(name, row["edgeplan_load"], file=sys.stderr, flush=True)
        current = read_manifest()
        if name in current:
            current[name]["edgeplan_load"] = row["edgeplan_load"]
            write_manifest(current)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, default=Path("/work/corpus-build"))
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--list", action="store_true", help="print the spec names and families")
    parser.add_argument("--verify", action="store_true", help="run edgeplan check on the committed models")
    parser.add_argument("--target", default="rk3588")
    parser.add_argument("--reproduce", action="store_true",
                        help="rebuild the --only models in a temporary folder and compare their hashes with the manifest")
    args = parser.parse_args()
    if args.list:
        for spec in specs():
            print(spec.name, spec.family)
        return 0
    only = args.only.split(",") if args.only else None
    if args.verify:
        return verify(args.target, set(only) if only else None)
    if args.reproduce:
        return reproduce(only or [])
    return build(args.build_dir, only, args.build_dir / "export_failures.tsv")


if __name__ == "__main__":
    sys.exit(main())
