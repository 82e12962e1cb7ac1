"""Build the real-architecture corpus: ONNX exports of random-initialised models, no weights downloaded.

Run with the corpus venv (torch 2.14.1, torchvision 0.29.1, timm, ultralytics, onnx, onnxscript), not edgeplan's:
    nice -n 10 /work/corpus-venv/bin/python tools/build_corpus.py --build-dir /work/corpus-build [--only NAME,...]
    .venv/bin/python tools/build_corpus.py --verify        # edgeplan's venv: fills the edgeplan_load column

Every model comes from an architecture definition (torchvision `weights=None`, timm `pretrained=False`,
ultralytics from its yaml, plain torch.nn modules) with fixed seeds, batch 1 and static input shapes.
The weighted file goes to BUILD_DIR/models/ (for rknn-toolkit2, which needs real tensors); the repository
keeps a structure-only copy in corpus/models/: large float initializers point at an external file that
does not exist (as in ../shared/zoo), while integer tensors and small floats stay inline so shape
arithmetic can still be computed. Already-built models are skipped (the manifest is the record).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "corpus"
MANIFEST = CORPUS / "MANIFEST.csv"
COLUMNS = ["name", "family", "source", "call", "exporter", "opset", "input_shapes", "num_nodes",
           "sha256_structure", "sha256_weighted", "weighted_bytes", "structure_bytes", "edgeplan_load", "notes"]
INLINE_MAX_FLOATS = 256  # float initializers up to this many elements stay inline (biases, scales)


@dataclass(frozen=True)
class Spec:
    name: str
    family: str
    library: str  # torchvision / timm / ultralytics / torch
    call: str  # the constructor as written in the manifest
    make: Callable[[], object] = field(compare=False)
    inputs: tuple[tuple[int, ...], ...] = ((1, 3, 224, 224),)
    exporter: str = "torchscript"  # or "dynamo"
    opset: int = 17


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


def _yolo(name: str, yaml: str, family: str, size: int = 320, opset: int = 17) -> Spec:
    def make():
        os.environ.setdefault("YOLO_OFFLINE", "1")
        from ultralytics import YOLO
        from ultralytics.nn.modules.head import Detect

        model = YOLO(yaml).model.fuse(verbose=False)
        model.eval()
        for module in model.modules():
            if isinstance(module, Detect):
                module.export = True
                module.format = "onnx"
                module.dynamic = False
        return model

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
    yield _nn("nn_stn_gridsample", pat, "spatial transformer (affine_grid + grid_sample)", _stn, [(1, 1, 64, 64)])
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
            grid = torch.nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
            return torch.nn.functional.grid_sample(x, grid, align_corners=False)

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


# ---- export and strip ---------------------------------------------------------------------------------------

def _export(spec: Spec, path: Path) -> None:
    import torch

    torch.backends.mha.set_fastpath_enabled(False)  # the fused fast path has no ONNX export
    torch.manual_seed(0)
    model = spec.make()
    model.eval()
    torch.manual_seed(1)
    args = tuple(torch.randn(*shape) for shape in spec.inputs)
    names = [f"input{i}" if len(spec.inputs) > 1 else "input" for i in range(len(spec.inputs))]
    with torch.no_grad():
        model(*args)
        if spec.exporter == "dynamo":
            program = torch.onnx.export(model, args, dynamo=True, opset_version=spec.opset, input_names=names,
                                        optimize=True, verbose=False)
            program.save(str(path))
        else:
            torch.onnx.export(model, args, str(path), dynamo=False, opset_version=spec.opset, input_names=names,
                              do_constant_folding=True)


def _is_float(data_type: int) -> bool:
    import onnx

    return data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                         onnx.TensorProto.BFLOAT16)


def strip(weighted: Path, out: Path) -> tuple[int, str]:
    """Write the structure-only copy; returns (number of nodes, note on what was stripped)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(weighted))
    graph = model.graph
    lifted = 0
    kept_nodes = []
    for node in graph.node:
        value = next((a.t for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR),
                     None)
        if node.op_type == "Constant" and value is not None and _is_float(value.data_type) and \
                _numel(value.dims) > INLINE_MAX_FLOATS and len(node.output) == 1:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(value)
            tensor.name = node.output[0]
            graph.initializer.append(tensor)
            lifted += 1
            continue
        kept_nodes.append(node)
    if lifted:
        del graph.node[:]
        graph.node.extend(kept_nodes)
    location = f"{out.stem}.weights"
    offset = stripped = inline = 0
    for tensor in graph.initializer:
        if not _is_float(tensor.data_type) or _numel(tensor.dims) <= INLINE_MAX_FLOATS:
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


def write_manifest(rows: dict[str, dict[str, str]], path: Path = MANIFEST) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, lineterminator="\n")
        writer.writeheader()
        for name in sorted(rows):
            writer.writerow({c: rows[name].get(c, "") for c in COLUMNS})
    tmp.replace(path)


def build(build_dir: Path, only: set[str] | None, failures: Path) -> int:
    import importlib.metadata as md

    import onnx
    import torch

    torch.set_num_threads(1)
    versions = {lib: md.version(lib) for lib in ("torch", "torchvision", "timm", "ultralytics")}
    rows = read_manifest()
    failed: list[str] = []
    for spec in specs():
        if only and spec.name not in only:
            continue
        weighted = build_dir / "models" / f"{spec.name}.onnx"
        structure = CORPUS / "models" / f"{spec.name}.onnx"
        if spec.name in rows and weighted.exists() and structure.exists():
            continue
        weighted.parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        try:
            _export(spec, weighted)
            onnx.checker.check_model(str(weighted))
            nodes, note = strip(weighted, structure)
        except Exception as exc:  # an architecture that does not export is recorded, not fatal
            failed.append(f"{spec.name}\t{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}")
            print(f"FAILED {spec.name}: {failed[-1]}", file=sys.stderr, flush=True)
            weighted.unlink(missing_ok=True)
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


def verify(target: str, only: set[str] | None = None) -> int:
    """Run `edgeplan check` on every committed model; a load error is recorded, not hidden."""
    rows = read_manifest()
    edgeplan = Path(sys.executable).parent / "edgeplan"
    for name, row in sorted(rows.items()):
        if (only and name not in only) or (not only and row.get("edgeplan_load")):
            continue
        path = CORPUS / "models" / f"{name}.onnx"
        out = subprocess.run([str(edgeplan), "check", str(path), "--target", target], capture_output=True,
                             text=True, timeout=600)
        lines = out.stderr.strip().splitlines()
        if out.returncode == 0:
            row["edgeplan_load"] = "ok"
        else:
            row["edgeplan_load"] = f"exit {out.returncode}: " + (lines[-1] if lines else "")[:300]
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
    args = parser.parse_args()
    if args.list:
        for spec in specs():
            print(spec.name, spec.family)
        return 0
    only = set(args.only.split(",")) if args.only else None
    if args.verify:
        return verify(args.target, only)
    return build(args.build_dir, only, args.build_dir / "export_failures.tsv")


if __name__ == "__main__":
    sys.exit(main())
