#!/usr/bin/python3
"""mpi4py_allreduce.py - MPI_Allreduce latency from Python, as an mpi4py
program sees it (mpi4py initialises MPI with MPI_THREAD_MULTIPLE).

    mpirun -np 2 /usr/bin/python3 contrib/bench/mpi4py_allreduce.py [SIZE ...]

SIZE in bytes (K/M suffixes), float32 sum, default 8 and 1M. Measured as
braid_bench measures: warm-up calls, then each call timed alone; the slowest
rank's time of each iteration (one MPI_Reduce(MAX) after the loop) and its
median are reported with algbw = S/t and busbw = algbw x 2(P-1)/P
(nccl-tests' definitions). Values are checked once per size.
Output: one line per size, "mpi4py allreduce np=P bytes=S p50_us=T
algbw_GBps=A busbw_GBps=B".
"""
import sys
import time

import numpy as np
from mpi4py import MPI


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def run_size(comm, nbytes, iters, warmup):
    P, rank = comm.Get_size(), comm.Get_rank()
    n = max(1, nbytes // 4)
    send = np.full(n, rank + 1, dtype=np.float32)
    recv = np.empty_like(send)
    comm.Allreduce(send, recv, op=MPI.SUM)
    expect = P * (P + 1) / 2
    if not np.all(recv == expect):
        sys.exit(f"mpi4py_allreduce: wrong result at {nbytes} bytes on rank {rank}")
    for _ in range(warmup):
        comm.Allreduce(send, recv, op=MPI.SUM)
    times = np.empty(iters)
    for i in range(iters):
        t0 = time.perf_counter()
        comm.Allreduce(send, recv, op=MPI.SUM)
        times[i] = time.perf_counter() - t0
    slowest = np.empty_like(times)
    comm.Reduce(times, slowest, op=MPI.MAX, root=0)
    return float(np.median(slowest)) if rank == 0 else 0.0


def main():
    comm = MPI.COMM_WORLD
    sizes = [parse_size(s) for s in sys.argv[1:]] or [8, 1 << 20]
    P = comm.Get_size()
    for nbytes in sizes:
        iters = 2000 if nbytes <= 65536 else 200
        t = run_size(comm, nbytes, iters, warmup=iters // 10)
        if comm.Get_rank() == 0:
            algbw = nbytes / t / 1e9
            print(f"mpi4py allreduce np={P} bytes={nbytes} p50_us={t * 1e6:.2f} "
                  f"algbw_GBps={algbw:.3f} busbw_GBps={algbw * 2 * (P - 1) / P:.3f}", flush=True)


if __name__ == "__main__":
    main()
