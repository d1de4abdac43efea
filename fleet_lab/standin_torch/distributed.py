"""torch.distributed of the fleet lab stand-in: NOT PyTorch's, and no NCCL. The ranks meet over TCP at MASTER_ADDR:
MASTER_PORT as the real env:// rendezvous does (rank 0 listens, the others connect), every collective really
combines every rank's values (rank 0 sums them and answers; a constant tensor's all-reduces are settled together at
the next read, barrier, broadcast or the group's end, in one round trip, so the time between two synchronize() calls
is the transfer's, never this machine's time to schedule the ranks), and an all-reduce queues the time NCCL takes on the
lent H200s for its size (torch.cuda.synchronize() waits for it, as for a GPU's kernels), as NCCL's variables and the
host's links make it:

    bus bandwidth (GB/s)     2 GPUs   4 GPUs   8 GPUs   where the figure comes from
    NVLink, every pair peers 326.4    352.5    370      fleet verify on the lent H200s, NVLS off (2: median of 20
                                                        runs, tests/data/h200-multi/verify20; 4: 352-353,
                                                        ../shared/captured/h200-multi/README.md); 8: nccl-tests#212
                                                        (~370 without NVLink SHARP)
    peer-to-peer off         28.2     25       25       NCCL_P2P_DISABLE=1 on the lent H200s (2: verify20's
    (NCCL_P2P_DISABLE=1,                                p2p-disabled run; 4: a user's all-reduce, captured README);
    NCCL_P2P_LEVEL=LOC, or a                            8: the 4-GPU figure (not measured)
    pair that cannot peer)

NCCL reads its variables from the environment, then NCCL_CONF_FILE (else ~/.nccl.conf), then /etc/nccl.conf (NCCL's
user guide); so does this. An all-reduce's time is its size / algbw, algbw = busbw * n / (2 (n - 1)).
"""

import json
import os
import socket
import time

from torch._tensor import Tensor

BUSBW = {"nvlink": {2: 326.4, 4: 352.5, 8: 370.0}, "host": {2: 28.2, 4: 25.0, 8: 25.0}}

_group = None


class _Group:
    def __init__(self, rank, world, peers, readers, server):
        self.rank, self.world, self.peers, self.reader, self.server = rank, world, peers, readers, server


def _setting(name):
    if name in os.environ:
        return os.environ[name]
    for path in (os.environ.get("NCCL_CONF_FILE") or os.path.expanduser("~/.nccl.conf"), "/etc/nccl.conf"):
        try:
            for line in open(path):
                key, eq, value = line.strip().partition("=")
                if eq and key.strip() == name:
                    return value.strip()
        except OSError:
            continue
    return None


def _busbw(world):
    import torch
    p2p = _setting("NCCL_P2P_DISABLE") not in ("1",) and (_setting("NCCL_P2P_LEVEL") or "").upper() not in ("LOC", "0")
    peers = all(torch.cuda.can_device_access_peer(i, j) for i in range(world) for j in range(i + 1, world))
    table = BUSBW["nvlink" if p2p and peers else "host"]
    return table.get(world) or table[max(k for k in table if k <= world)] if world >= 2 else 1e9


def init_process_group(backend="nccl", rank=None, world_size=None, timeout=None, **_):
    global _group
    rank = int(os.environ["RANK"] if rank is None else rank)
    world = int(os.environ["WORLD_SIZE"] if world_size is None else world_size)
    address = (os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29500")))
    wait = timeout.total_seconds() if timeout is not None else 1800
    peers, readers, server = {}, {}, None
    if rank == 0:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(address)
        server.listen(world)
        server.settimeout(wait)
        while len(peers) < world - 1:
            conn, _ = server.accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # each collective is a few small writes
            reader = conn.makefile("r")   # one reader per peer: a second would lose what this one buffered
            peer = int(reader.readline())
            peers[peer], readers[peer] = conn, reader
    else:
        deadline = time.time() + wait
        while True:
            try:
                conn = socket.create_connection(address, timeout=wait)
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"The client socket has timed out after {wait:.0f}s while trying to connect "
                                       f"to ({address[0]}, {address[1]}).")
                time.sleep(0.05)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.sendall(f"{rank}\n".encode())
        peers[0], readers[0] = conn, conn.makefile("r")
    _group = _Group(rank, world, peers, readers, server)


def _exchange(values, combine):
    """Every rank's values to rank 0, combined there, the answer back to every rank."""
    g = _group
    if g.rank != 0:
        g.peers[0].sendall((json.dumps(values) + "\n").encode())
        return json.loads(g.reader[0].readline())
    every = [values] + [json.loads(g.reader[r].readline()) for r in range(1, g.world)]
    answer = combine(every)
    for r in range(1, g.world):
        g.peers[r].sendall((json.dumps(answer) + "\n").encode())
    return answer


def _set(tensor, answer):
    if isinstance(answer, (int, float)):
        tensor.__dict__.update(Tensor._filled(tensor.shape, answer, tensor.dtype, str(tensor.device)).__dict__)
    else:
        values = Tensor(answer, tensor.dtype, str(tensor.device))
        values._constant = None
        tensor.__dict__.update(values.__dict__)


def _mine(tensor):
    return tensor._constant if tensor._constant is not None else tensor.tolist()


_pending = []   # constant tensors all-reduced since the last exchange: [tensor, times], in call order


def _resolve():
    """The queued all-reduces of constant tensors, settled in ONE exchange (the real ones run on the GPU while the
    caller goes on; here one round trip between the ranks when a value is needed, not one per call)."""
    if not _pending or _group is None:
        return
    world = _group.world
    mine = [[tensor._constant, times] for tensor, times in _pending]

    def settle(every):   # each tensor: the ranks' values summed, then times-1 more all-reduces of equal values
        return [sum(rank[i][0] for rank in every) * world ** (every[0][i][1] - 1) for i in range(len(every[0]))]

    answers = _exchange(mine, settle)
    for (tensor, _), value in zip(_pending, answers):
        _set(tensor, value)
    _pending.clear()


def all_reduce(tensor, op=None, group=None, async_op=False):
    import torch
    g = _group
    algbw = _busbw(g.world) * g.world / (2 * (g.world - 1)) if g.world > 1 else 1e9
    torch.cuda._enqueue(tensor.numel() * 4 / (algbw * 1e9))   # the transfer's time: synchronize() waits for it
    if tensor._constant is not None:
        entry = next((e for e in _pending if e[0] is tensor), None)
        if entry:
            entry[1] += 1
        else:
            _pending.append([tensor, 1])
        return
    _resolve()
    lists = lambda every: [sum(col) for col in zip(*every)]
    _set(tensor, _exchange(tensor.tolist(), lists))


def broadcast(tensor, src=0, group=None, async_op=False):
    _resolve()
    _set(tensor, _exchange(_mine(tensor), lambda every: every[src]))


def barrier(group=None, async_op=False, device_ids=None):
    _resolve()
    _exchange(0, lambda every: 0)


def is_initialized():
    return _group is not None


def get_rank(group=None):
    return _group.rank


def get_world_size(group=None):
    return _group.world


def destroy_process_group(group=None):
    global _group
    if _group is not None:
        _resolve()
        _exchange(0, lambda every: 0)   # every rank reaches the end before rank 0 closes its sockets
        for conn in _group.peers.values():
            conn.close()
        if _group.server is not None:
            _group.server.close()
    _group = None
