# A training job stand-in on the real GPU: holds ~58 GB and keeps the GPU busy until killed (or 240 s).
import time, torch
hold = torch.empty(58 * 2**30, dtype=torch.uint8, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + 240
while time.time() < end:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
