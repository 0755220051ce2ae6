"""The skinny kernel (stage=\"auto\", M or N <= 16) against cuBLAS: time, bandwidth, ratio (H200 runs)."""
import torch, sys
torch.backends.cuda.matmul.allow_tf32 = False
from gemmlab import api
from gemmlab.bench.candidates import Operands
from gemmlab.bench.timing import Policy, L2Flush, measure
pol = Policy(target_seconds=0.05, max_seconds=1.0, min_reps=10, max_reps=500); fl = L2Flush()
def t(fn):
    fn(); torch.cuda.synchronize(); return measure(fn, pol, fl).summary.median
for (M,N,K) in [(1,4096,4096),(4096,1,4096),(1,8192,8192),(16,8192,8192),(8192,16,8192),(8,4096,4096)]:
    for lay in ("nn","nt","tn","tt"):
        ops = Operands.make(M,N,K,lay,0); ops.reference()
        cb = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
        ops.poison(); plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage="auto"); fn()
        ok = ops.check_out().correct
        ms = t(fn); byt = 4*(M*K+K*N+M*N)
        print(f"skinny {M}x{N}x{K} {lay} ok={ok} {ms*1e3:7.1f} us {byt/ms/1e9:6.2f} TB/s ({byt/ms/1e9/3.96*100:4.0f}% of 3.96) cuBLAS {cb*1e3:7.1f} us -> {cb/ms:4.2f}x  {plan.choice.spec.id} split {plan.choice.split_k}", flush=True)
        del ops
