"""edgeplan: deployment plans for ONNX models on Jetson DLA/GPU and Rockchip NPUs."""

__version__ = "0.1.0"
