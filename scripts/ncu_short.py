"""One gemmlab auto call and one torch.mm per shape (for ncu): python3 ncu_short.py M N K"""
import sys, torch
torch.backends.cuda.matmul.allow_tf32 = False
import gemmlab
M, N, K = map(int, sys.argv[1:4])
a = torch.rand(M, K, device="cuda"); b = torch.rand(K, N, device="cuda"); out = torch.empty(M, N, device="cuda")
gemmlab.matmul(a, b, out=out); torch.mm(a, b, out=out); torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
gemmlab.matmul(a, b, out=out); torch.mm(a, b, out=out); torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
