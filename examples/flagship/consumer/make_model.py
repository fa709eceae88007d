"""Make a small real ONNX model and its reference outputs, computed by numpy (not onnxruntime).

    python make_model.py OUT_DIR [--seed N]

Writes OUT_DIR/model.onnx (MatMul → Add → Relu → MatMul → Add → Sigmoid → Softmax, float32,
opset 17, shape [1, 16] → [1, 8]) and OUT_DIR/reference.txt for ort_check. Nothing here is
committed output: the model is made where it is used.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(seed: int) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((16, 32)).astype(np.float32)
    b1 = rng.standard_normal(32).astype(np.float32)
    w2 = rng.standard_normal((32, 8)).astype(np.float32) / 4
    b2 = rng.standard_normal(8).astype(np.float32)
    x = rng.standard_normal((1, 16)).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"),
                                                        (b2, "b2"))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]),
             helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]),
             helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
             helper.make_node("Add", ["h3", "b2"], ["h4"]),
             helper.make_node("Sigmoid", ["h4"], ["h5"]),
             helper.make_node("Softmax", ["h5"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "kiln_check",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # onnxruntime 1.21 reads IR ≤ 10; 8 is what opset 17 came with
    onnx.checker.check_model(model)
    # the reference, in float64 numpy: the same arithmetic, not the same library
    h = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2 + b2
    s = 1 / (1 + np.exp(-h))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return model, x, (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    model, x, y = build(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    onnx.save(model, args.out / "model.onnx")
    with open(args.out / "reference.txt", "w") as fh:
        fh.write(f"input {x.size} " + " ".join(f"{v:.9g}" for v in x.ravel()) + "\n")
        fh.write(f"output {y.size} " + " ".join(f"{v:.9g}" for v in y.ravel()) + "\n")
    print(f"{args.out / 'model.onnx'}: {len(model.graph.node)} nodes, reference in "
          f"{args.out / 'reference.txt'}")


if __name__ == "__main__":
    main()
