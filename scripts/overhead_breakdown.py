"""Where the host time of one gemmlab call goes at 64^3 and 256^3 (H200 diagnostic)."""
import time, torch
import gemmlab
from gemmlab import api
def loop(f, n=500):
    for _ in range(50): f()
    torch.cuda.synchronize(); t0=time.perf_counter()
    for _ in range(n): f()
    t1=time.perf_counter(); torch.cuda.synchronize(); t2=time.perf_counter()
    return 1e6*(t1-t0)/n, 1e6*(t2-t0)/n
for n in (64, 256):
    a=torch.rand(n,n,device="cuda"); b=torch.rand(n,n,device="cuda"); out=torch.empty(n,n,device="cuda")
    plan, fn = api.prepare(a, b, out=out)
    print(n, "plan:", plan.summary[:160])
    for name, f in (("prepared launch only", fn), ("new_empty", lambda: a.new_empty((n,n))),
                    ("matmul(out=)", lambda: gemmlab.matmul(a,b,out=out)), ("matmul", lambda: gemmlab.matmul(a,b)),
                    ("torch.mm", lambda: torch.mm(a,b)), ("signature", lambda: api._signature(a,b,None,out,1.0,0.0,"auto",None,False))):
        h, e = loop(f)
        print(f"  {n}^3 {name:22s} host {h:6.2f} us  e2e {e:6.2f} us")
    s=torch.cuda.Event(enable_timing=True); e_=torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(200): fn()
    e_.record(); torch.cuda.synchronize(); print(f"  GPU time per prepared launch (back to back): {s.elapsed_time(e_)*1e3/200:.2f} us")
