"""ONNX import: every zoo model loads, attributes are normalised, shapes and constants are known."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from optimizer.errors import BadInputError
from optimizer.ir import load_model, parse_input_shapes
from tests.conftest import ZOO, const, needs_zoo, save_model, value, weight, zoo_models


@needs_zoo
@pytest.mark.parametrize("path", zoo_models(), ids=lambda p: p.name)
def test_every_zoo_model_loads_with_known_shapes(path):
    graph = load_model(path)
    assert len(graph.nodes) > 10
    unknown = [o for n in graph.nodes for o in n.outputs if o and graph.tensors[o].shape is None]
    assert unknown == []
    assert all(n.name for n in graph.nodes)
    assert len({n.name for n in graph.nodes}) == len(graph.nodes)


@needs_zoo
@pytest.mark.parametrize(("name", "gmacs"), [("tv_resnet18.onnx", 1.81), ("tv_resnet50.onnx", 4.09),
                                             ("tv_mobilenet_v2.onnx", 0.30), ("tv_vit_b_16.onnx", 17.56)])
def test_macs_match_published_counts(name, gmacs):
    graph = load_model(ZOO / name)
    assert sum(n.macs for n in graph.nodes) / 1e9 == pytest.approx(gmacs, rel=0.01)


@needs_zoo
def test_folding_resolves_attention_reshape_targets():
    graph = load_model(ZOO / "tv_vit_b_16.onnx")
    reshapes = [n for n in graph.nodes if n.op_type == "Reshape" and not n.folded]
    assert reshapes and all(n.attrs["target"] is not None for n in reshapes)


@needs_zoo
def test_dynamic_dims_are_reported_and_fixed():
    graph = load_model(ZOO / "transformer_encoder_dynseq.onnx")
    assert graph.dynamic_dims == (("input", 0, "batch"), ("input", 1, "seq"))
    fixed = load_model(ZOO / "transformer_encoder_dynseq.onnx", {"input": (1, 128, 256)})
    assert fixed.dynamic_dims == ()
    assert sum(n.macs for n in fixed.nodes) > 0


@needs_zoo
def test_control_flow_is_opaque():
    graph = load_model(ZOO / "tv_ssdlite320_mobilenet_v3_large.onnx")
    ifs = [n for n in graph.nodes if n.op_type == "If"]
    assert ifs and all(n.opaque for n in ifs)


@needs_zoo
def test_structure_only_models_never_read_weights(tmp_path):
    # the zoo's external-data files do not exist; loading must not need them
    model = onnx.load(ZOO / "tv_resnet18.onnx", load_external_data=False)
    assert any(t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer)
    assert load_model(ZOO / "tv_resnet18.onnx").node("/conv1/Conv").weight_elements == 64 * 3 * 7 * 7 + 64


def test_auto_pad_becomes_explicit(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], strides=[2, 2],
                            auto_pad="SAME_UPPER")
    path = save_model(tmp_path / "m.onnx", [node], [value("x", [1, 4, 7, 8])], [value("y", None)],
                      [weight("w", [4, 4, 3, 3])])
    attrs = load_model(path).node("c").attrs
    assert attrs["pads"] == (1, 0, 1, 1)
    assert attrs["dilations"] == (1, 1) and attrs["group"] == 1


def test_kernel_shape_from_weight(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c")
    path = save_model(tmp_path / "m.onnx", [node], [value("x", [1, 4, 8, 8])], [value("y", None)],
                      [weight("w", [2, 4, 5, 3])])
    attrs = load_model(path).node("c").attrs
    assert attrs["kernel_shape"] == (5, 3) and attrs["pads"] == (0, 0, 0, 0) and attrs["strides"] == (1, 1)


def test_resize_scales_from_sizes(tmp_path):
    node = helper.make_node("Resize", ["x", "", "", "s"], ["y"], name="r", mode="nearest")
    path = save_model(tmp_path / "m.onnx", [node], [value("x", [1, 4, 8, 8])], [value("y", None)],
                      [const("s", np.array([1, 4, 24, 16], np.int64))])
    assert load_model(path).node("r").attrs["scales"] == (1.0, 1.0, 3.0, 2.0)


def test_clip_bounds_from_inputs_and_old_attrs(tmp_path):
    new = save_model(tmp_path / "a.onnx", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="c")],
                     [value("x", [1, 4])], [value("y", None)],
                     [const("lo", np.array(0, np.float32)), const("hi", np.array(6, np.float32))])
    old = save_model(tmp_path / "b.onnx", [helper.make_node("Clip", ["x"], ["y"], name="c", min=0.0, max=6.0)],
                     [value("x", [1, 4])], [value("y", None)], opset=9)
    for path in (new, old):
        attrs = load_model(path).node("c").attrs
        assert (attrs["min"], attrs["max"]) == (0.0, 6.0)


def test_unnamed_nodes_get_stable_unique_names(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"], name="Relu_1"),
             helper.make_node("Relu", ["b"], ["y"])]
    path = save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 4])], [value("y", None)])
    names = [n.name for n in load_model(path).nodes]
    assert names == ["Relu_0", "Relu_1", "Relu_2"]
    assert [n.name for n in load_model(path).nodes] == names


def test_unnamed_node_colliding_with_an_explicit_name(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="Relu_1"), helper.make_node("Relu", ["a"], ["y"])]
    path = save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 4])], [value("y", None)])
    names = [n.name for n in load_model(path).nodes]
    assert names[0] == "Relu_1" and len(set(names)) == 2


def test_bytes_per_precision(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    path = save_model(tmp_path / "m.onnx", [node], [value("x", [1, 4, 8, 8])], [value("y", None)],
                      [weight("w", [2, 4, 3, 3])])
    graph = load_model(path)
    conv = graph.node("c")
    assert conv.macs == 2 * 8 * 8 * 4 * 9
    assert graph.weight_bytes(conv, "int8") == 72 and graph.weight_bytes(conv, "fp16") == 144
    assert graph.activation_bytes(conv, "fp32") == (4 * 64 + 2 * 64) * 4


def test_parse_input_shapes():
    assert parse_input_shapes(["input=1x3x224x224", "a=b=2x3"]) == {"input": (1, 3, 224, 224), "a=b": (2, 3)}
    for bad in ("input", "input=", "input=1xAx3", "input=0x3"):
        with pytest.raises(BadInputError):
            parse_input_shapes([bad])


# ---- bad input: one clear error naming the file (and node), never a traceback -------------------

def _relu(tmp_path, name="m.onnx", **kwargs):
    return save_model(tmp_path / name, [helper.make_node("Relu", ["x"], ["y"], name="r")],
                      [value("x", [1, 4])], [value("y", None)], **kwargs)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(BadInputError, match="file not found"):
        load_model(tmp_path / "none.onnx")
    with pytest.raises(BadInputError, match="is a directory"):
        load_model(tmp_path)


@pytest.mark.parametrize("data", [b"\x00garbage\xff" * 50, b"not an onnx model at all"])
def test_garbage_bytes(tmp_path, data):
    path = tmp_path / "g.onnx"
    path.write_bytes(data)
    with pytest.raises(BadInputError, match="not an ONNX model"):
        load_model(path)


def test_truncated_protobuf(tmp_path):
    data = _relu(tmp_path).read_bytes()
    for cut in (len(data) // 3, len(data) - 3):
        path = tmp_path / f"t{cut}.onnx"
        path.write_bytes(data[:cut])
        with pytest.raises(BadInputError, match="not an ONNX model"):
            load_model(path)


def test_cycle(tmp_path):
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="first"),
             helper.make_node("Relu", ["a"], ["b"], name="second")]
    path = save_model(tmp_path / "c.onnx", nodes, [value("x", [1, 4])], [value("b", None)])
    with pytest.raises(BadInputError, match="cycle") as info:
        load_model(path)
    assert "node first" in str(info.value)


def test_unknown_domain(tmp_path):
    node = helper.make_node("Magic", ["x"], ["y"], name="m", domain="com.example")
    graph = helper.make_graph([node], "t", [value("x", [1, 4])], [value("y", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    onnx.save(model, tmp_path / "d.onnx")
    with pytest.raises(BadInputError, match=r"unknown domain 'com\.example'") as info:
        load_model(tmp_path / "d.onnx")
    assert "node m" in str(info.value)


def test_missing_input(tmp_path):
    path = save_model(tmp_path / "m.onnx", [helper.make_node("Add", ["x", "ghost"], ["y"], name="add")],
                      [value("x", [1, 4])], [value("y", None)])
    with pytest.raises(BadInputError, match="'ghost' is not produced") as info:
        load_model(path)
    assert "node add" in str(info.value)


def test_duplicate_outputs(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Relu", ["x"], ["y"], name="b")]
    path = save_model(tmp_path / "m.onnx", nodes, [value("x", [1, 4])], [value("y", None)])
    with pytest.raises(BadInputError, match="produced twice"):
        load_model(path)


@pytest.mark.parametrize("opset", [0, 99])
def test_opset_out_of_range(tmp_path, opset):
    with pytest.raises(BadInputError, match=f"opset {opset}"):
        load_model(_relu(tmp_path, opset=opset))


def _old_conv_add(tmp_path, opset: int, ir_version: int = 3):
    """Conv + Add(broadcast, axis) + Relu as exporters wrote them before opset 7; structure-only weight."""
    add_attrs = {"broadcast": 1, "axis": 1} if opset < 7 else {}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "b"], ["a"], name="add", **add_attrs),
             helper.make_node("Relu", ["a"], ["y"], name="relu")]
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4, 3, 3], data_location=TensorProto.EXTERNAL)
    for key, val in (("location", "w.bin"), ("offset", "0"), ("length", "576")):
        entry = w.external_data.add()
        entry.key, entry.value = key, val
    graph = helper.make_graph(nodes, "old", [value("x", [1, 4, 8, 8])], [value("y", None)],
                              [w, const("b", np.zeros((4, 1, 1), np.float32))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    path = tmp_path / f"opset{opset}.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(("opset", "converted"), [(1, 1), (6, 6), (7, None), (8, None)])
def test_opsets_below_7_are_converted(tmp_path, opset, converted):
    graph = load_model(_old_conv_add(tmp_path, opset))
    assert graph.converted_from_opset == converted
    assert graph.opset == max(opset, 7)
    assert [n.name for n in graph.nodes] == ["conv", "add", "relu"]  # names survive the conversion
    assert graph.inputs == ("x",) and graph.shape("y") == (1, 4, 8, 8)
    assert "b" not in graph.inputs  # initializers listed as inputs only for the converter


def test_an_opset_the_converter_cannot_raise_is_one_clear_error(tmp_path):
    path = save_model(tmp_path / "m.onnx", [helper.make_node("Pad", ["x"], ["y"], name="p", paddings=[0, 1, 0, 1])],
                      [value("x", [1, 4])], [value("y", None)], opset=1)
    with pytest.raises(BadInputError) as info:
        load_model(path)
    message = info.value.one_line()
    assert "opset 1 is below 7" in message and "onnx.version_converter" in message and "Pad" in message
    assert "\n" not in message and ".h:" not in message


@pytest.mark.parametrize("dim", [0, -3, 1 << 40])
def test_absurd_input_dims(tmp_path, dim):
    path = save_model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], name="r")],
                      [value("x", [1, dim])], [value("y", None)])
    with pytest.raises(BadInputError):
        load_model(path)


def _external(tmp_path: Path, location: str) -> Path:
    tensor = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    model_dir = tmp_path / "model"
    model_dir.mkdir(exist_ok=True)
    return save_model(model_dir / "m.onnx", [node], [value("x", [1, 4])], [value("y", None)], [tensor])


@pytest.mark.parametrize("location", ["/etc/passwd", "../secret.bin", "sub/../../secret.bin"])
def test_external_data_outside_the_model_folder_is_refused(tmp_path, location):
    with pytest.raises(BadInputError, match="refused"):
        load_model(_external(tmp_path, location))


def test_external_data_through_a_symlink_out_of_the_folder_is_refused(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\0" * 16)
    path = _external(tmp_path, "link.bin")
    os.symlink(secret, path.parent / "link.bin")
    with pytest.raises(BadInputError, match="symlink"):
        load_model(path)


def test_missing_external_data_inside_the_folder_is_structure_only(tmp_path):
    graph = load_model(_external(tmp_path, "weights.bin"))
    assert graph.node("add").weight_elements == 4


def test_input_shape_errors(tmp_path):
    path = _relu(tmp_path)
    with pytest.raises(BadInputError, match="not a model input"):
        load_model(path, {"nope": (1, 4)})
    with pytest.raises(BadInputError, match="rank"):
        load_model(path, {"x": (1, 4, 4)})
    with pytest.raises(BadInputError, match="fixes it at 4"):
        load_model(path, {"x": (1, 5)})


def test_wrong_attribute_type(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[3, 3])
    node.attribute[0].type = onnx.AttributeProto.FLOATS
    node.attribute[0].floats.extend([3.0, 3.0])
    del node.attribute[0].ints[:]
    path = save_model(tmp_path / "m.onnx", [node], [value("x", [1, 4, 8, 8])], [value("y", None)],
                      [weight("w", [2, 4, 3, 3])])
    with pytest.raises(BadInputError, match="kernel_shape") as info:
        load_model(path)
    assert "node c" in str(info.value) or "node name: c" in str(info.value)
