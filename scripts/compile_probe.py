"""What torch.compile traces for gemmlab.nn.Linear on this torch (H200 diagnostic): the FX graph
Dynamo hands the backend, for the layer alone and inside a TransformerEncoderLayer.
    python3 scripts/compile_probe.py"""
import torch

import gemmlab.nn as gnn

graphs = []


def backend(gm, example_inputs):
    graphs.append(gm)
    return gm.forward


print("torch", torch.__version__)
lin = gnn.Linear(64, 128, device="cuda")
torch.compile(lin, backend=backend, fullgraph=True)(torch.randn(4, 64, device="cuda"))
layer = torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, batch_first=True).cuda().train()
gnn.replace_linear(layer)
torch.compile(layer, backend=backend, fullgraph=True)(torch.randn(2, 8, 64, device="cuda"))
for i, gm in enumerate(graphs):
    ops = [str(n.target) for n in gm.graph.nodes if n.op == "call_function" and "gemmlab" in str(n.target)]
    print(f"graph {i}: gemmlab calls {ops}")


def flags(x):
    return x + torch.tensor([float(torch.compiler.is_compiling()), float(gnn._is_compiling()),
                             float(torch.compiler.is_exporting()), float(gnn._is_exporting()),
                             float(torch._dynamo.is_compiling())], device=x.device)


print("is_compiling, alias, is_exporting, alias, _dynamo.is_compiling under compile:",
      torch.compile(flags, backend="eager", fullgraph=True)(torch.zeros(5, device="cuda")).tolist())
