"""The corpus cases the RKNN catalog entries cite as their evidence: the committed layer table (rknn-toolkit2
2.5.0) says so, and edgeplan's check says the same. Skipped where the corpus tables are not present."""

from __future__ import annotations

import sys
from functools import cache

import pytest

from optimizer.check import check_graph
from optimizer.ir import load_model
from tests.conftest import REPO

CORPUS = REPO / "corpus"
pytestmark = pytest.mark.skipif(not (CORPUS / "rknn" / "layers.csv.gz").exists(), reason="no corpus tables")

# (model, soc, precision, ONNX node, runs on the CPU)
CITED = [
    ("tv_resnet18", "rk3588", "int8", "/fc/Gemm", True),  # RKNN-OUTPUT-RELAYOUT: [1,1000] misses 16
    ("timm_eva02_tiny_patch14_224_dynamo", "rk3562", "int8", "node_slice_3", False),  # rotary: a gather conv
    ("timm_eva02_tiny_patch14_224_dynamo", "rk3588", "fp16", "node_slice_4", False),
    ("tv_quantized_mobilenet_v2", "rk3566", "fp16", "/features/0/0/Cast", False),  # uint8 -> uint8: removed
    ("tv_quantized_mobilenet_v2", "rk3588", "fp16", "/features/0/0/Cast", False),
    ("tv_resnet18", "rk3588", "fp16", "/fc/Gemm", False),  # ... but is a multiple of 8
    ("tv_squeezenet1_1", "rk3588", "int8", "/Flatten", True),
    ("tv_resnet18", "rk3566", "int8", "/fc/Gemm", False),  # a 2-D Gemm has no token transpose
    ("yolov8n_320", "rk3588", "fp16", "/model.22/Concat_3", True),  # [1,84,2100]
    ("yolov8n_320", "rk3588", "int8", "/model.22/Sigmoid", True),  # RKNN-HEAD-RELAYOUT
    ("yolov8n_seg_320", "rk3588", "fp16", "/model.22/Mul_2", True),  # RKNN-HEAD-RELAYOUT, map-form majority
    ("yolov8n_seg_320", "rk3588", "int8", "/model.22/Sigmoid", False),
    ("yolov8n_seg_320", "rk3566", "fp16", "/model.22/Mul_2", True),  # the same majority form on rk3566
    ("yolov8n_seg_320", "rk3566", "int8", "/model.22/Sigmoid", False),
    ("timm_mobilenetv4_hybrid_medium", "rk3576", "int8", "/blocks/blocks.2/blocks.2.4/attn/Mul_1", True),  # SHARED-KV
    ("timm_mobilenetv4_hybrid_medium", "rv1126b", "fp16", "/blocks/blocks.2/blocks.2.4/attn/Unsqueeze_1", True),
    ("timm_mobilenetv4_hybrid_medium", "rk3588", "fp16", "/blocks/blocks.2/blocks.2.4/attn/MatMul_1", False),
    ("timm_gcvit_xxtiny", "rk3562", "fp16", "/stages/stages.2/blocks.1/attn/Tile", False),  # repeats all 1
    ("timm_mobilevit_xs", "rk3588", "int8", "/stages/stages.4/stages.4.1/Reshape", True),  # RKNN-WIDTH-SPLIT
    ("timm_mobilevit_xs", "rk3588", "fp16", "/stages/stages.4/stages.4.1/Reshape", False),
    ("timm_mobilevit_xs", "rk3588", "int8", "/stages/stages.3/stages.3.1/Reshape", False),  # 16-pixel rows
    ("yolov8n_320", "rk3566", "fp16", "/model.22/Sigmoid", True),
    ("yolov8n_320", "rk3576", "fp16", "/model.22/Sigmoid", False),
    ("yolov8n_320", "rk3566", "int8", "/model.22/Concat_3", True),  # output Concat relayout on rk3566
    ("yolov8n_320", "rk3566", "fp16", "/model.22/dfl/Reshape", True),  # changes the channel, absorbs the Transpose
    ("yolov8n_320", "rk3566", "fp16", "/model.22/dfl/Transpose", False),
    ("nn_lstm_1x128", "rk3566", "fp16", "/rnn/Transpose_1", True),  # sequence-first transpose
    ("nn_lstm_1x128", "rk3566", "int8", "/fc/MatMul", True),  # token MatMul whose result leaves the graph
    ("nn_lstm_1x128", "rk3588", "fp16", "/fc/Add", True),  # [1,32,10] misses 8
    ("nn_sdpa_d192_h3", "rk3566", "fp16", "/Squeeze_2", True),  # RKNN-EXMATMUL-B (V)
    ("nn_sdpa_d192_h3", "rk3566", "fp16", "/Transpose_1", False),  # folds into exMatMul
    ("nn_sdpa_d192_h3", "rk3588", "int8", "/proj/Add", False),  # [1,197,192] is a multiple of 16
    ("timm_deit_tiny_patch16_224", "rk3566", "fp16", "/blocks/blocks.0/mlp/fc1/MatMul", False),
    ("timm_deit_tiny_patch16_224", "rk3566", "fp16", "/blocks/blocks.0/attn/Squeeze_2", True),
    ("timm_deit_tiny_patch16_224", "rk3566", "fp16", "/patch_embed/proj/Conv", False),  # stride 16 rewritten
    ("timm_deit_tiny_patch16_224", "rk3588", "int8", "/blocks/blocks.0/norm1/LayerNormalization", False),
    ("tv_alexnet", "rk3588", "fp16", "/Flatten", True),  # 256x6x6 pixels folded into the channel axis
    ("tv_alexnet", "rk3588", "int8", "/Flatten", True),
    ("tv_alexnet", "rk3576", "int8", "/Flatten", False),
    ("tv_alexnet", "rk3576", "int8", "/classifier/classifier.1/Gemm", False),  # K = 9216, constant: tiled Conv
    ("tv_alexnet", "rv1126b", "fp16", "/classifier/classifier.1/Gemm", False),
    ("timm_levit_128s", "rk3566", "int8", "/stages/stages.1/downsample/attn_downsample/q/down/Reshape", False),
    ("timm_deit_tiny_patch16_224", "rk3576", "int8", "/blocks/blocks.0/norm2/LayerNormalization", False),
    # GroupNorm fused into exNorm, its Reshape no pixel Flatten; InstanceNormalization NPU on rk3566 inside it
    ("timm_shvit_s1", "rk3588", "int8", "/stages/stages.1/blocks/blocks.0/mixer/m/pre_norm/Reshape", False),
    ("nn_se_mish_groupnorm", "rk3566", "int8", "/gn/InstanceNormalization", False),
    ("nn_se_mish_groupnorm", "rk3588", "fp16", "/gn/InstanceNormalization", False),
    # a float32 -> float32 Cast is removed
    ("timm_efficientvit_b0", "rk3576", "fp16", "/stages/stages.2/blocks/blocks.1/context_module/main/Cast_1", False),
    # 1x1/stride-2 AveragePool: INT8 CPU on rk3576/rv1126b only
    ("timm_levit_conv_128s", "rk3576", "int8", "/stages/stages.1/downsample/attn_downsample/q/down/AveragePool", True),
    ("timm_levit_conv_128s", "rv1126b", "int8", "/stages/stages.1/downsample/attn_downsample/q/down/AveragePool", True),
    ("timm_levit_conv_128s", "rk3576", "fp16", "/stages/stages.1/downsample/attn_downsample/q/down/AveragePool", False),
    ("timm_levit_conv_128s", "rk3588", "int8", "/stages/stages.1/downsample/attn_downsample/q/down/AveragePool", False),
    ("yolo11n_320", "rk3566", "fp16", "/model.10/m/m.0/attn/Split", False),  # RKNN-EXMATMUL-B: N=100 in FP16
    ("yolo11n_320", "rk3566", "int8", "/model.10/m/m.0/attn/Split", True),  # ... is not 8 INT8 elements
    ("timm_mixer_s32_224", "rk3566", "fp16", "/blocks/blocks.0/Transpose", True),  # RKNN-TOKEN-RELAYOUT, N=49
    ("timm_mixer_s32_224", "rk3566", "int8", "/blocks/blocks.0/mlp_tokens/fc2/MatMul", True),  # carries the back swap
    ("timm_mixer_s32_224", "rk3566", "int8", "/blocks/blocks.0/Transpose_1", False),
    ("timm_mixer_s32_224", "rk3566", "fp16", "/norm/LayerNormalization", True),  # input of the token mean
    ("timm_mixer_s32_224", "rk3566", "fp16", "/ReduceMean", True),
    ("nn_se_mish_groupnorm", "rk3566", "int8", "/gn/Reshape", False),  # 8 channels per group
    ("nn_tcn_conv1d", "rk3566", "fp16", "/head/Conv", True),  # RKNN-MAP-OUTPUT: [1,4,256]
    ("nn_window_attention_pad_roll", "rk3566", "int8", "/Transpose_3", True),  # RKNN-WINDOW-HEADS
    ("nn_crnn_bilstm", "rk3566", "fp16", "/rnn/Transpose", True),  # into the batch axis
    ("nn_channel_layernorm_cnn", "rk3566", "int8", "/dw/Conv", True),  # RKNN-NORM-RELAYOUT (W LayerNorm)
    ("nn_channel_layernorm_cnn", "rk3566", "int8", "/ln_c/LayerNormalization", False),  # channels-last: folds
    ("nn_crnn_bilstm", "rk3566", "int8", "/fc/MatMul", True),  # token output through LogSoftmax, C=37
    ("nn_window_attention_pad_roll", "rk3566", "fp16", "/Squeeze_2", False),  # V needs no transpose there
    ("tv_alexnet", "rk3566", "int8", "/Flatten", True),  # 256x6x6 pixels folded into the channel axis
    ("nn_sdpa_causal_d128_h4", "rk3566", "fp16", "/proj/Add", True),  # a token output after the bias Add
    ("nn_sdpa_causal_d128_h4", "rk3566", "fp16", "/proj/MatMul", False),
    # RKNN-EXMATMUL-CONV, CaiT's talking heads written as Transpose + constant MatMul + Transpose
    ("timm_cait_xxs24_224", "rk3566", "fp16", "/blocks/blocks.0/attn/Transpose_2", True),
    ("timm_cait_xxs24_224", "rk3566", "int8", "/blocks/blocks.0/attn/Transpose_5", True),
    ("timm_cait_xxs24_224", "rk3566", "int8", "/blocks/blocks.0/attn/Transpose_3", False),
    ("timm_cait_xxs24_224", "rk3566", "fp16", "/blocks/blocks.0/attn/Transpose_4", False),
    ("timm_cait_xxs24_224", "rk3566", "int8", "/blocks/blocks.0/attn/Gather_2", True),  # V: 196 tokens, INT8
    ("timm_cait_xxs24_224", "rk3566", "fp16", "/blocks/blocks.0/attn/Gather_2", False),
    # the head join after an Add on P.V is exMatMul's layout
    ("timm_mvitv2_tiny", "rk3566", "int8", "/stages.1/blocks.0/attn/Transpose_8", False),
    ("timm_coat_lite_tiny", "rk3566", "fp16", "/serial_blocks1.0/factoratt_crpe/Transpose_2", False),
    # layout runs composing to a reshape, and the LSTM direction join (Sequencer2D)
    ("timm_sequencer2d_s", "rk3566", "int8", "/stages/stages.0/blocks/blocks.0/rnn_tokens/Transpose", False),
    ("timm_sequencer2d_s", "rk3566", "fp16", "/stages/stages.0/blocks/blocks.0/rnn_tokens/rnn_v/Transpose", False),
    ("timm_sequencer2d_s", "rk3566", "fp16", "/stages/stages.0/blocks/blocks.0/rnn_tokens/rnn_h/Transpose_1", False),
    ("timm_sequencer2d_s", "rk3566", "int8", "/stages/stages.0/blocks/blocks.0/rnn_tokens/rnn_h/Transpose", True),
    # RKNN-WINDOW-TOKENS
    ("timm_swin_tiny_patch4_window7_224", "rk3566", "fp16", "/layers/layers.1/blocks/blocks.0/Reshape_4", True),
    ("timm_swin_tiny_patch4_window7_224", "rk3566", "int8", "/layers/layers.1/blocks/blocks.0/attn/proj/Add", True),
    ("timm_tiny_vit_5m_224", "rk3566", "fp16", "/stages/stages.1/blocks/blocks.0/attn/Reshape", True),
    ("timm_maxvit_rmlp_pico_rw_256", "rk3566", "int8", "/stages/stages.2/blocks/blocks.0/attn_block/Reshape_1", False),
    ("timm_swin_tiny_patch4_window7_224", "rk3566", "fp16", "/layers/layers.1/blocks/blocks.0/attn/Transpose", False),
    ("timm_swin_tiny_patch4_window7_224", "rk3566", "int8", "/layers/layers.1/blocks/blocks.0/attn/Reshape", True),
    ("timm_swin_tiny_patch4_window7_224", "rk3566", "fp16", "/layers/layers.1/blocks/blocks.0/attn/Split", True),
    ("timm_swinv2_cr_tiny_ns_224", "rk3566", "int8", "/stages/stages.1/blocks.1/attn/Transpose", True),  # cosine
    # RKNN-VECTOR-SEQUENCE (ECA)
    ("timm_ecaresnet26t", "rk3566", "fp16", "/layer1/layer1.0/se/Reshape", True),
    ("timm_ecaresnet26t", "rk3566", "int8", "/layer1/layer1.0/se/conv/Conv", True),
    ("timm_ecaresnet26t", "rk3566", "int8", "/layer1/layer1.0/se/Reshape_1", False),
    # RKNN-PIXEL-REDUCE (dynamo's (3, 2) spatial mean) and RKNN-EINSUM-OPERANDS (spaced Einsum), rk3566
    ("tv_mobilenet_v3_small_dynamo", "rk3566", "fp16", "node_mean_1", True),
    ("tv_mobilenet_v3_small_dynamo", "rk3566", "int8", "n0_3", True),  # the HardSwish making its map
    ("tv_mobilenet_v3_small_dynamo", "rk3566", "int8", "node_view", True),  # the reshape after node_mean_9
    ("tv_mobilenet_v3_small_dynamo", "rk3588", "int8", "node_mean_1", False),
    ("timm_convnextv2_atto", "rk3566", "fp16", "/stages/stages.0/blocks/blocks.0/mlp/grn/ReduceL2", True),
    ("timm_convnextv2_atto", "rk3566", "fp16", "/stages/stages.0/blocks/blocks.0/mlp/act/Mul_1", True),
    ("timm_deit_tiny_patch16_224_dynamo", "rk3566", "fp16", "node_unbind__2", True),  # V's Slice + Squeeze
    ("timm_deit_tiny_patch16_224_dynamo", "rk3566", "int8", "node_Slice_31", False),
    ("tv_maxvit_t", "rk3566", "int8", "/blocks.0/layers.0/layers/grid_attention/attn_layer/attn_layer.1/Mul_3", True),
    # q/k/v cut apart by Slices (CoAtNet): the head Reshape folds, V's Slice carries its transpose
    ("timm_coatnet_nano_rw_224", "rk3566", "int8", "/stages/stages.2/blocks/blocks.1/attn/Reshape", False),
    ("timm_coatnet_nano_rw_224", "rk3566", "int8", "/stages/stages.2/blocks/blocks.1/attn/Slice_2", True),
    ("timm_coatnet_nano_rw_224", "rk3566", "int8", "/stages/stages.2/blocks/blocks.1/attn/Transpose_1", False),
    # attention on 4-D windows (MaxViT block and grid partitions)
    ("timm_maxvit_rmlp_pico_rw_256", "rk3566", "fp16", "/stages/stages.2/blocks/blocks.0/attn_block/attn/Transpose", True),
    ("timm_maxvit_rmlp_pico_rw_256", "rk3566", "int8", "/stages/stages.2/blocks/blocks.0/attn_grid/attn/MatMul_1", True),
    ("timm_maxvit_rmlp_pico_rw_256", "rk3566", "int8", "/stages/stages.2/blocks/blocks.0/attn_block/attn/Reshape_3", True),
    ("timm_maxvit_rmlp_pico_rw_256", "rk3566", "fp16", "/stages/stages.2/blocks/blocks.0/attn_grid/attn/Reshape", False),
    # windows kept in axis 1, windows before heads (Twins' LSA)
    ("timm_twins_svt_small", "rk3566", "int8", "/blocks.1.0/attn/Transpose_2", True),
    ("timm_twins_svt_small", "rk3566", "fp16", "/blocks.1.0/attn/MatMul_1", True),
    ("timm_twins_svt_small", "rk3566", "int8", "/blocks.1.0/attn/Transpose_4", True),
    ("timm_nest_tiny", "rk3566", "int8", "/levels/levels.0/transformer_encoder/transformer_encoder.0/attn/Transpose", False),
    # a ScatterND writing every element in order (attn[:, :, 0:, 0:] = rel) is removed
    ("timm_mvitv2_tiny", "rk3588", "fp16", "/stages.0/blocks.0/attn/ScatterND", False),
    ("timm_mvitv2_tiny", "rk3588", "int8", "/stages.1/blocks.0/attn/ScatterND", False),  # 4.9M-element indices
    # RKNN-GRID-MERGE: MaxViT's grid reverse (n = 8) is a CPU 5-D Transpose; with one window per axis nothing moves
    ("timm_maxvit_rmlp_pico_rw_256", "rk3576", "int8", "/stages/stages.0/blocks/blocks.0/attn_grid/Reshape_3", True),
    ("timm_maxvit_rmlp_pico_rw_256", "rk3576", "fp16", "/stages/stages.3/blocks/blocks.0/attn_grid/Reshape_3", False),
    ("timm_maxvit_rmlp_pico_rw_256", "rk3576", "fp16", "/stages/stages.0/blocks/blocks.0/attn_block/Reshape_3", False),
    # rk3588 Softmax of a map: one plane of at most 65536 (FP16) / 16384 (INT8) elements
    ("timm_cait_xxs24_224", "rk3588", "int8", "/blocks/blocks.0/attn/Softmax", True),
    ("timm_cait_xxs24_224", "rk3588", "fp16", "/blocks/blocks.0/attn/Softmax", False),
    ("timm_mvitv2_tiny", "rk3588", "fp16", "/stages.0/blocks.0/attn/Softmax", True),
    ("timm_mvitv2_tiny", "rk3588", "int8", "/stages.3/blocks.1/attn/Softmax", False),  # (1,8,49,49)
    ("timm_convit_tiny", "rk3588", "int8", "/blocks.0/attn/Softmax_1", False),  # positional: from constants
    # RKNN-LEVEL-ROWS beyond detector heads: CoaT's map <-> rows, 152 channels and 196/49 pixels unaligned in INT8
    ("timm_coat_tiny", "rk3588", "int8", "/serial_blocks3.1/cpe3/Reshape", True),
    ("timm_coat_tiny", "rk3588", "int8", "/serial_blocks4.0/cpe4/Reshape_1", True),
    ("timm_coat_tiny", "rk3588", "fp16", "/serial_blocks3.1/cpe3/Reshape", False),
    ("timm_coat_tiny", "rk3588", "int8", "/serial_blocks2.1/cpe2/Reshape", False),  # 784 pixels
    ("timm_coat_tiny", "rk3588", "int8", "/parallel_blocks.0/Reshape_3", True),  # map rows around a Resize
    ("timm_crossvit_tiny_240", "rk3562", "int8", "/Resize", True),  # cubic
    # RKNN-SCORE-GRID: decomposed relative positions
    ("timm_mvitv2_tiny", "rk3588", "fp16", "/stages.2/blocks.1/attn/MatMul", True),  # N = M = 196
    ("timm_mvitv2_tiny", "rk3588", "int8", "/stages.2/blocks.0/attn/MatMul", False),  # M = 784
    ("timm_mvitv2_tiny", "rk3588", "fp16", "/stages.0/blocks.0/attn/Reshape_9", True),  # M = 196, one head
    ("timm_mvitv2_tiny", "rk3588", "int8", "/stages.1/blocks.0/attn/Reshape_9", False),  # M = 784
    ("timm_mvitv2_tiny", "rk3588", "int8", "/stages.2/blocks.1/attn/Unsqueeze", True),  # rel_h column, qw = 14
    ("timm_mvitv2_tiny", "rk3588", "fp16", "/stages.2/blocks.1/attn/Unsqueeze", False),
    # RKNN-CLS-MAP: CoaT's crpe with a class token
    ("timm_coat_lite_tiny", "rk3588", "fp16", "/serial_blocks3.0/factoratt_crpe/crpe3/Reshape_1", True),
    ("timm_coat_lite_tiny", "rk3588", "int8", "/serial_blocks1.0/factoratt_crpe/crpe1/Reshape", True),  # 200704
    ("timm_coat_lite_tiny", "rk3588", "int8", "/serial_blocks2.0/factoratt_crpe/crpe2/Reshape", False),
    ("timm_coat_lite_tiny", "rk3588", "fp16", "/serial_blocks1.0/factoratt_crpe/crpe1/Reshape_1", False),
    # RKNN-EINSUM-LABELS: torchvision MaxViT's spaced Einsums; RKNN-EINSUM-HANDOVER: the Softmax between them
    ("tv_maxvit_t", "rk3576", "fp16", "/blocks.0/layers.0/layers/window_attention/attn_layer/attn_layer.1/Einsum", True),
    ("tv_maxvit_t", "rk3588", "int8", "/blocks.0/layers.0/layers/grid_attention/attn_layer/attn_layer.1/Einsum_1", True),
    ("tv_maxvit_t", "rk3588", "fp16", "/blocks.0/layers.0/layers/window_attention/attn_layer/attn_layer.1/Softmax", True),
    ("tv_maxvit_t", "rk3576", "int8", "/blocks.0/layers.0/layers/window_attention/attn_layer/attn_layer.1/Softmax", False),
    # RKNN-FACTOR-ATTN: CoaT's factorised attention with a class token (rk3566, FP16 and INT8)
    ("timm_coat_lite_tiny", "rk3566", "fp16", "/serial_blocks2.1/factoratt_crpe/Reshape", True),
    ("timm_coat_lite_tiny", "rk3566", "int8", "/serial_blocks2.1/factoratt_crpe/Squeeze", True),
    ("timm_coat_lite_tiny", "rk3566", "fp16", "/serial_blocks1.0/factoratt_crpe/Transpose_1", True),
    ("timm_coat_lite_tiny", "rk3566", "int8", "/serial_blocks3.0/factoratt_crpe/crpe3/Mul", True),
    ("timm_coat_lite_tiny", "rk3566", "fp16", "/serial_blocks4.1/factoratt_crpe/Reshape_1", True),
    ("timm_coat_lite_tiny", "rk3566", "fp16", "/serial_blocks1.0/factoratt_crpe/Squeeze_1", False),  # k: no layer
    ("timm_coat_lite_tiny", "rk3566", "fp16", "/serial_blocks1.0/factoratt_crpe/crpe1/Transpose", False),  # folds
    ("timm_coat_tiny", "rk3566", "int8", "/parallel_blocks.0/factoratt_crpe3/Reshape_1", True),
    # RKNN-GRID-MERGE-ENDS: timm MaxViT's grid reverse on rk3566 (window side 8: the linear layer; 5: the Reshape)
    ("timm_maxvit_rmlp_pico_rw_256", "rk3566", "fp16", "/stages/stages.0/blocks/blocks.0/attn_grid/attn/proj/MatMul",
     True),
    ("timm_maxvit_rmlp_pico_rw_256", "rk3566", "int8", "/stages/stages.2/blocks/blocks.1/attn_grid/Reshape_3", True),
    ("timm_maxvit_rmlp_pico_rw_256", "rk3566", "fp16", "/stages/stages.0/blocks/blocks.0/attn_block/attn/proj/MatMul",
     False),  # the block reverse is exWindow
    ("timm_test_maxvit", "rk3566", "fp16", "/stages/stages.0/blocks/blocks.0/attn_grid/Reshape_2", True),
    ("timm_test_maxvit", "rk3566", "fp16", "/stages/stages.0/blocks/blocks.0/attn_grid/attn/proj/MatMul", False),
    # RKNN-MERGE-CHANNELS-LAST: timm Swin's patch merging
    ("timm_swin_tiny_patch4_window7_224", "rk3566", "fp16", "/layers/layers.1/downsample/Reshape_2", True),
    ("timm_swin_tiny_patch4_window7_224", "rk3566", "int8", "/layers/layers.2/downsample/Transpose_1", True),
    ("timm_swinv2_cr_tiny_ns_224", "rk3566", "fp16", "/stages/stages.3/downsample/norm/LayerNormalization", True),
    ("timm_swin_tiny_patch4_window7_224", "rk3566", "fp16", "/layers/layers.1/downsample/Reshape_3", False),
    # MViTv2's pooled attention on rk3566: the pooled-map flatten, RKNN-POOLED-V, RKNN-SCORE-GRID-BACK
    ("timm_mvitv2_tiny", "rk3566", "fp16", "/stages.2/blocks.1/attn/Reshape_2", False),
    ("timm_mvitv2_tiny", "rk3566", "int8", "/stages.2/blocks.1/attn/Reshape_6", True),  # N 196: INT8 only
    ("timm_mvitv2_tiny", "rk3566", "fp16", "/stages.2/blocks.1/attn/Reshape_6", False),
    ("timm_mvitv2_tiny", "rk3566", "fp16", "/stages.3/blocks.1/attn/Transpose_6", True),  # N 49
    ("timm_mvitv2_tiny", "rk3566", "fp16", "/stages.2/blocks.1/attn/Reshape_9", True),
    ("timm_mvitv2_tiny", "rk3566", "fp16", "/stages.2/blocks.1/attn/Reshape_8", False),
    # RKNN-KV-HEADS: keys and values projected apart from the queries (PVTv2, Twins' GSA)
    ("timm_pvt_v2_b0", "rk3566", "fp16", "/stages/stages.1/blocks.0/attn/Mul_1", True),
    ("timm_pvt_v2_b0", "rk3566", "int8", "/stages/stages.2/blocks.0/attn/Reshape_2", True),
    ("timm_pvt_v2_b0", "rk3566", "fp16", "/stages/stages.3/blocks.0/attn/Reshape_1", True),
    ("timm_pvt_v2_b0", "rk3566", "fp16", "/stages/stages.3/Reshape", False),
    ("timm_twins_svt_small", "rk3566", "int8", "/blocks.3.1/attn/Mul_1", True),
    ("timm_twins_svt_small", "rk3566", "fp16", "/pos_block.3/Reshape_1", False),
]


@cache
def _truth():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import rknn_placement

    _, runs, _ = rknn_placement.read_corpus(CORPUS)
    return {(r.model, r.soc, r.precision): r for r in runs}, rknn_placement.toolkit_targets


@cache
def _graph(model):
    return load_model(CORPUS / "models" / f"{model}.onnx")


_REPORTS: dict = {}


def _report(catalog, model, soc):
    """One check per (catalog, model, SoC): several cited nodes share it."""
    key = (id(catalog), model, soc)
    if key not in _REPORTS:
        _REPORTS[key] = check_graph(_graph(model), catalog, soc)
    return _REPORTS[key]


@pytest.mark.parametrize(("model", "soc", "precision", "node", "cpu"), CITED)
def test_cited_corpus_verdicts(catalog, model, soc, precision, node, cpu):
    runs, toolkit_targets = _truth()
    run = runs.get((model, soc, precision))
    if run is None:
        pytest.skip(f"{model} {soc} {precision} not in the committed tables")
    graph = _graph(model)
    truth, _ = toolkit_targets(run, {n.name for n in graph.nodes})
    assert (truth.get(node) == "CPU") is cpu, "the toolkit's table"
    verdict = _report(catalog, model, soc).verdict(node)
    assert (not verdict.runs_on("npu", precision)) is cpu, [v.line() for v in verdict.violations]
