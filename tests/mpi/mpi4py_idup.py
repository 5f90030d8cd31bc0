#!/usr/bin/python3
"""mpi4py_idup.py - Comm.Idup beside blocking collectives, from mpi4py.

Each round: request = comm.Idup(), then blocking Allreduce, Bcast and
Alltoall on the parent before request.Wait() (Open MPI posts the idup's
context-id agreement from its progress loop, inside or beside those
calls), then an Allreduce on the new communicator; every value checked
against the known inputs. Also the pattern of mpi4py's own testIDup: the
duplicate compares CONGRUENT with its parent.

Prints "SKIP: why" and exits 0 when this python3 lacks mpi4py or numpy.
"""
import sys

try:
    import numpy as np
    from mpi4py import MPI
except ImportError as e:
    print(f"SKIP: {sys.executable} cannot import mpi4py and numpy ({e}); "
          "Debian: apt-get install python3-mpi4py python3-numpy")
    sys.exit(0)

ROUNDS = 10


def main():
    world = MPI.COMM_WORLD
    parent = world.Dup()
    P, me = parent.Get_size(), parent.Get_rank()
    checks = bad = 0
    for k in range(ROUNDS):
        dup, request = parent.Idup()
        for n in (4, 6000):
            x = np.arange(n, dtype=np.int64) + 1000 * (me + 1) + k
            y = np.empty_like(x)
            parent.Allreduce(x, y, op=MPI.SUM)
            want = sum(np.arange(n, dtype=np.int64) + 1000 * (q + 1) + k for q in range(P))
            checks += 1
            bad += int(not np.array_equal(y, want))
            root = k % P
            b = np.arange(n, dtype=np.int64) * 3 + k if me == root else np.full(n, -1, np.int64)
            parent.Bcast(b, root=root)
            checks += 1
            bad += int(not np.array_equal(b, np.arange(n, dtype=np.int64) * 3 + k))
            s = np.array([[me * 100 + q + k] * n for q in range(P)], dtype=np.int64)
            r = np.empty_like(s)
            parent.Alltoall(s, r)
            checks += 1
            bad += int(not np.array_equal(r, np.array([[q * 100 + me + k] * n for q in range(P)])))
        request.Wait()
        checks += 1
        bad += int(MPI.Comm.Compare(parent, dup) != MPI.CONGRUENT)
        checks += 1
        bad += int(dup.allreduce(1, op=MPI.SUM) != P)
        dup.Free()
    parent.Free()
    total = world.reduce(bad, op=MPI.SUM, root=0)
    ntot = world.reduce(checks, op=MPI.SUM, root=0)
    if me == 0:
        print(f"mpi4py idup: np={P} checks={ntot} {total} wrong", flush=True)
    return 1 if me == 0 and total else 0


if __name__ == "__main__":
    sys.exit(main())
