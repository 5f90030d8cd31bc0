#!/usr/bin/python3
"""logreg.py - data-parallel logistic regression with mpi4py and numpy.

The Python twin of logreg.c: the same synthetic data set (generated from
the global sample index with the same hash, so it depends only on
P x samples-per-rank), the same model, loss and plain gradient descent, and
one in-place comm.Allreduce (SUM) of numpy float64 per step carrying the
gradient and the loss. The final loss is comparable with logreg.c's at the
same P and options (numpy's exp and evaluation order may move the last
bits); the RESULT line has the same fields, so run_app_compare.sh reads it.

mpi4py initialises MPI with MPI_THREAD_MULTIPLE by default, as most Python
programs on MPI do: this is the thread level braid has to run under.

Run with the python3 that has mpi4py and numpy (Debian: /usr/bin/python3,
packages python3-mpi4py and python3-numpy).
"""
import argparse
import hashlib
import sys
import time

import numpy as np
from mpi4py import MPI

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix(x):
    """splitmix64's finaliser on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def uniform_pm1(key):
    """uniform in [-1, 1) from a key, exactly as logreg.c computes it"""
    return (mix(key) >> np.uint64(11)).astype(np.float64) * 2.0**-52 - 1.0


def true_weight(f):
    return uniform_pm1((np.uint64(0x7E57) << np.uint64(40)) ^ f.astype(np.uint64))


def make_shard(cfg, rank):
    """(idx, val, label): this rank's samples, nnz features each"""
    dense = cfg.nnz == 0 or cfg.nnz >= cfg.features
    nnz = cfg.features if dense else cfg.nnz
    g = np.uint64(rank) * np.uint64(cfg.samples) + np.arange(cfg.samples, dtype=np.uint64)
    key = (g[:, None] << np.uint64(20)) ^ np.arange(nnz, dtype=np.uint64)[None, :]
    if dense:
        idx = np.broadcast_to(np.arange(nnz, dtype=np.int64), key.shape).copy()
    else:
        idx = (mix(key ^ (np.uint64(0x1D) << np.uint64(56))) % np.uint64(cfg.features)).astype(np.int64)
    val = uniform_pm1(key ^ (np.uint64(0x2E) << np.uint64(56)))
    tw = true_weight(idx)
    margin = np.full(cfg.samples, 0.25)
    for k in range(nnz):  # in logreg.c's order, so the labels match it
        margin += tw[:, k] * val[:, k]
    noise = 0.5 * uniform_pm1(g ^ (np.uint64(0x3F) << np.uint64(56)))
    label = (margin + noise > 0).astype(np.float64)
    return idx, val, label


def softplus(z):
    """log(1 + exp(z)), stable"""
    return np.where(z > 0, z + np.log1p(np.exp(-np.abs(z))), np.log1p(np.exp(-np.abs(z))))


def margins(idx, val, w, F):
    z = np.full(idx.shape[0], w[F])
    for k in range(idx.shape[1]):  # summed per sample in logreg.c's order
        z += w[idx[:, k]] * val[:, k]
    return z


def seq_sum(v):
    """left-to-right sum, as logreg.c's loops add (np.sum adds pairwise)"""
    return float(np.cumsum(v)[-1]) if v.size else 0.0


def local_gradient(shard, F, w, grad):
    """grad[:F] = sum (p - y) x, grad[F] = sum (p - y), grad[F+1] = loss"""
    idx, val, label = shard
    z = margins(idx, val, w, F)
    d = 1.0 / (1.0 + np.exp(-z)) - label
    # bincount adds in sample-then-feature order, as logreg.c does
    grad[:F] = np.bincount(idx.ravel(), weights=(d[:, None] * val).ravel(), minlength=F)
    grad[F] = seq_sum(d)
    grad[F + 1] = seq_sum(softplus(z) - label * z)


def local_loss(shard, F, w):
    idx, val, label = shard
    z = margins(idx, val, w, F)
    return seq_sum(softplus(z) - label * z)


def parse(argv):
    p = argparse.ArgumentParser(description="data-parallel logistic regression (mpi4py)")
    p.add_argument("--large", action="store_true",
                   help="1048576 sparse features, 32 non-zeros/sample, 2048 samples/rank, 30 steps, lr 8")
    p.add_argument("-f", dest="features", type=int)
    p.add_argument("-z", dest="nnz", type=int, help="non-zeros per sample (0 = dense)")
    p.add_argument("-n", dest="samples", type=int, help="samples per rank")
    p.add_argument("-s", dest="steps", type=int)
    p.add_argument("-l", dest="lr", type=float)
    p.add_argument("-q", dest="quiet", action="store_true", help="print only the RESULT line")
    a = p.parse_args(argv)
    base = dict(features=1 << 20, nnz=32, samples=2048, steps=30, lr=8.0) if a.large else \
        dict(features=64, nnz=0, samples=4096, steps=200, lr=0.5)
    for k, v in base.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.features < 1 or a.nnz < 0 or a.samples < 1 or a.steps < 1:
        p.error("sizes and steps must be >= 1")
    return a


def main(argv):
    comm = MPI.COMM_WORLD
    rank, P = comm.Get_rank(), comm.Get_size()
    cfg = parse(argv)
    F = cfg.features
    nparams, nbuf = F + 1, F + 2  # weights and bias; the loss rides along
    ntotal = float(cfg.samples * P)
    shard = make_shard(cfg, rank)
    w = np.zeros(nparams)
    grad = np.empty(nbuf)
    t_step = np.empty(cfg.steps)
    t_ar = np.empty(cfg.steps)
    loss0 = 0.0
    comm.Barrier()
    for step in range(cfg.steps):
        t0 = MPI.Wtime()
        local_gradient(shard, F, w, grad)
        t1 = MPI.Wtime()
        comm.Allreduce(MPI.IN_PLACE, grad, op=MPI.SUM)
        t2 = MPI.Wtime()
        w -= (cfg.lr / ntotal) * grad[:nparams]
        if step == 0:
            loss0 = grad[F + 1] / ntotal
        t_step[step] = MPI.Wtime() - t0
        t_ar[step] = t2 - t1

    loss = comm.allreduce(local_loss(shard, F, w), op=MPI.SUM) / ntotal
    checksum = float(np.sum(w))
    h = np.frombuffer(hashlib.blake2b(w.tobytes(), digest_size=8).digest(), dtype=np.uint64).copy()
    hmin, hmax = np.empty_like(h), np.empty_like(h)
    comm.Allreduce(h, hmin, op=MPI.MIN)
    comm.Allreduce(h, hmax, op=MPI.MAX)
    t_step_max = np.empty_like(t_step) if rank == 0 else None
    t_ar_max = np.empty_like(t_ar) if rank == 0 else None
    comm.Reduce(t_step, t_step_max, op=MPI.MAX, root=0)
    comm.Reduce(t_ar, t_ar_max, op=MPI.MAX, root=0)
    identical = int(hmin[0] == hmax[0])
    if rank == 0:
        step_us = float(np.median(t_step_max)) * 1e6
        ar_us = float(np.median(t_ar_max)) * 1e6
        levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
                  MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
        thread = levels.get(MPI.Query_thread(), "?")
        if not cfg.quiet:
            kind = "dense" if cfg.nnz == 0 or cfg.nnz >= F else "sparse"
            print(f"logreg.py: P={P}, {F} {kind} features, {cfg.samples} samples/rank, {cfg.steps} "
                  f"steps, lr {cfg.lr:g}; allreduce of {nbuf} doubles ({nbuf * 8 / 1024:.1f} KiB) "
                  f"per step; MPI thread level {thread}")
            print(f"loss: initial {loss0:.10g}  final {loss:.10g}")
            print(f"weights: checksum {checksum:.10g}  hash {int(h[0]):016x} "
                  f"({'identical' if identical else 'DIFFERENT'} on all ranks)")
            print(f"time/step: median {step_us:.1f} us, allreduce {ar_us:.1f} us "
                  f"({100 * ar_us / step_us if step_us > 0 else 0:.0f}%)")
        print(f"RESULT loss={loss:.10g} loss0={loss0:.10g} checksum={checksum:.10g} "
              f"hash={int(h[0]):016x} identical={identical} step_us={step_us:.2f} "
              f"allreduce_us={ar_us:.2f} np={P} params={nparams} thread={thread}", flush=True)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
