"""3xTF32 accuracy on the H200: s13 at several promote_k against cuBLAS FP32 and float64, on the
accuracy contract's inputs (U(-1,1), N(0,1), U(0,1), wide exponents; K = 1024, 4096, 16384).
Prints one line per case; writes JSON to the path given (docs/stages/s12-s13.md quotes it).
Usage: tf32x3_accuracy.py [OUT.json [SIZE [PK,PK,..]]] (SIZE x SIZE outputs, default 512)."""
import json
import os
import sys

import torch

import gemmlab
from gemmlab.bench.baselines import disable_tf32
from gemmlab.check import contract_data as data


def main(out_path=None, size=512, promote=(32, 64, 128, 256)):
    disable_tf32()
    rows = []
    for K in (1024, 4096, 16384):
        for kind in ("uniform", "normal", "positive", "wide"):
            g = torch.Generator(device="cuda")
            g.manual_seed(K + len(kind))
            a, b = data(kind, (size, K), g), data(kind, (K, size), g)
            ref = a.double() @ b.double()
            bound = K * 2.0 ** -24 * (a.double().abs() @ b.double().abs())
            err = lambda x: float(torch.linalg.vector_norm(x.double() - ref) / torch.linalg.vector_norm(ref))  # noqa
            row = {"K": K, "data": kind, "cublas_fp32": err(a @ b),
                   "s11_ieee": err(gemmlab.matmul(a, b, stage="s11"))}
            for pk in promote:
                o = gemmlab.matmul(a, b, stage="s13", config={"promote_k": pk})
                row[f"s13_pk{pk}"] = err(o)
                row[f"s13_pk{pk}_max_over_bound"] = float(((o.double() - ref).abs() / bound).max())
            rows.append(row)
            print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"size": size, "rows": rows, "gpu": torch.cuda.get_device_name(),
                       "commit": os.environ.get("GEMMLAB_GIT_COMMIT")}, f, indent=1)


if __name__ == "__main__":
    # tf32x3_accuracy.py [OUT.json [SIZE [PK,PK,..]]]: SIZE x SIZE outputs (the contract test: 2048)
    args = sys.argv[1:]
    main(args[0] if args else None, int(args[1]) if len(args) > 1 else 512,
         tuple(int(p) for p in args[2].split(",")) if len(args) > 2 else (32, 64, 128, 256))
