"""The ground floor: what NVIDIA, PyTorch and the platforms publish, as tables, and the lookups over them.

Facts read these tables to name what they see (a platform's signs, a driver's newest CUDA, a cuda-compat path);
decisions read them to judge it. Nothing here imports any other part of fleet, so neither of the two floors above
reaches back up to the other for a table:

    platforms.py    the GPU platforms and kinds of GPU, the JetPack releases and the Jetson boards each runs
    cuda_table.py   which CUDA each Linux driver runs (natively, by minor-version and by forward compatibility)
    storage.py      where a pod's volume disk is mounted and what fleet places on it
    loader_paths.py the kinds of process, and the cuda-compat and stub directories as the loader meets them
    torch.py        what each torch release publishes: CUDA variants per CPU, Python range, architectures
    apt_repos.py    NVIDIA's apt repository per distribution and the first CUDA each serves; RPM-only ones
"""
