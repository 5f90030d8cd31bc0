#!/usr/bin/python3
"""mpi4py_collectives.py - braid under an mpi4py program.

mpi4py initialises MPI with MPI_THREAD_MULTIPLE by default. Two Python
threads, each with its own communicators (a dup of MPI_COMM_WORLD and its
reversed split, made by the thread itself), run the seven collectives braid
implements on numpy arrays (int64 sums, 1 element to 128 Ki elements) at
once - mpi4py releases the GIL inside MPI calls - and check every value. Then the data-parallel
pattern of contrib/apps/logreg.py: in-place float64 Allreduce of a gradient.

Prints "SKIP: why" and exits 0 when this python3 lacks mpi4py or numpy
(run_mpi_tests.sh counts the case as skipped).
"""
import sys
import threading

try:
    import numpy as np
    from mpi4py import MPI
except ImportError as e:
    print(f"SKIP: {sys.executable} cannot import mpi4py and numpy ({e}); "
          "Debian: apt-get install python3-mpi4py python3-numpy")
    sys.exit(0)

SIZES = (1, 3, 1000, 131072)  # int64 elements: 8 B to 1 MiB


def tval(key, q, n):
    """rank q's contribution at indexes 0..n-1 of collective `key`"""
    return np.int64(key) * 1000003 + np.int64(q) * 7919 + np.arange(n, dtype=np.int64)


def tsum(key, P, n):
    return sum(tval(key, q, n) for q in range(P))


class Worker(threading.Thread):
    def __init__(self, tid, dup):
        super().__init__()
        self.tid, self.comms, self.checks, self.bad, self.error = tid, (dup,), 0, 0, None

    def check(self, ok):
        self.checks += 1
        self.bad += 0 if ok else 1

    def collectives(self, comm, key, n):
        r, P = comm.Get_rank(), comm.Get_size()
        block = max(1, n // P)
        comm.Barrier()
        root = key % P
        buf = tval(key, root, n) if r == root else np.full(n, -1, dtype=np.int64)
        comm.Bcast(buf, root=root)
        self.check(np.array_equal(buf, tval(key, root, n)))
        out = np.empty(n, dtype=np.int64)
        comm.Allreduce(tval(key, r, n), out, op=MPI.SUM)
        self.check(np.array_equal(out, tsum(key, P, n)))
        root = (key + 1) % P
        comm.Reduce(tval(key, r, n), out if r == root else None, op=MPI.SUM, root=root)
        if r == root:
            self.check(np.array_equal(out, tsum(key, P, n)))
        rb = np.empty(block, dtype=np.int64)
        comm.Reduce_scatter_block(tval(key, r, block * P), rb, op=MPI.SUM)
        self.check(np.array_equal(rb, tsum(key, P, block * P)[r * block:(r + 1) * block]))
        counts = [block + q % 2 for q in range(P)]
        first = sum(counts[:r])
        rs = np.empty(counts[r], dtype=np.int64)
        comm.Reduce_scatter(tval(key, r, sum(counts)), rs, recvcounts=counts, op=MPI.SUM)
        self.check(np.array_equal(rs, tsum(key, P, sum(counts))[first:first + counts[r]]))
        ag = np.empty(block * P, dtype=np.int64)
        comm.Allgather(tval(key, r, block), ag)
        self.check(np.array_equal(ag, np.concatenate([tval(key, q, block) for q in range(P)])))

    def run(self):
        try:
            # the reversed split runs braid's allgather on this thread's dup
            dup = self.comms[0]
            self.comms = (dup, dup.Split(0, dup.Get_size() - 1 - dup.Get_rank()))
            for s, n in enumerate(SIZES):
                for c, comm in enumerate(self.comms):
                    self.collectives(comm, (self.tid * 100 + s) * 2 + c, n)
        except Exception as e:  # reported by the main thread
            self.error = e


def gradient_allreduce(comm):
    """logreg.py's step: an in-place float64 Allreduce of a gradient"""
    r, P = comm.Get_rank(), comm.Get_size()
    grad = np.arange(66, dtype=np.float64) * (r + 1)
    comm.Allreduce(MPI.IN_PLACE, grad, op=MPI.SUM)
    return np.array_equal(grad, np.arange(66, dtype=np.float64) * (P * (P + 1) / 2))


def main():
    world = MPI.COMM_WORLD
    rank, P = world.Get_rank(), world.Get_size()
    level = MPI.Query_thread()
    workers = []
    for t in range(2):  # dups made by the main thread, in the same order on every rank
        workers.append(Worker(t, world.Dup()))
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    checks = sum(w.checks for w in workers) + 2
    bad = sum(w.bad for w in workers) + (level != MPI.THREAD_MULTIPLE)
    bad += not gradient_allreduce(world)
    errors = [f"thread {w.tid}: {w.error!r}" for w in workers if w.error is not None]
    for e in errors:
        print(f"FAIL [world rank {rank}] {e}", file=sys.stderr)
    for w in workers:
        for c in w.comms:
            c.Free()
    totals = world.gather((checks, bad + len(errors)), root=0)
    if rank == 0:
        c, b = sum(t[0] for t in totals), sum(t[1] for t in totals)
        print(f"mpi4py collectives: np={P}, thread level "
              f"{'multiple' if level == MPI.THREAD_MULTIPLE else level}, 2 threads x 7 collectives "
              f"x {len(SIZES)} sizes x 2 communicators; {c} checks, {b} wrong", flush=True)
        return 1 if b else 0
    return 1 if bad or errors else 0


if __name__ == "__main__":
    sys.exit(main())
