# What one shell gets: the libcuda.so.1 the loader picks, cuInit's code, torch's verdict, LD_LIBRARY_PATH.
import ctypes, os, warnings
warnings.simplefilter("ignore")
lib = ctypes.CDLL("libcuda.so.1")
code = lib.cuInit(0)
maps = [x.split()[-1] for x in open("/proc/self/maps") if "libcuda.so" in x]
try:
    import torch
    avail = torch.cuda.is_available()
except Exception as exc:
    avail = f"{type(exc).__name__}"
print("cuInit", code, "torch.cuda.is_available", avail, "libcuda", os.path.realpath(maps[0]) if maps else None,
      "LD_LIBRARY_PATH", os.environ.get("LD_LIBRARY_PATH", ""))
