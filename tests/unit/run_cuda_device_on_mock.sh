#!/bin/sh
# run_cuda_device_on_mock.sh - tests/unit/test_cuda_device, written for a
# real GPU, on the mock CUDA driver built as libcuda.so.1
# (tests/mpi/mock_libcuda.c: two GPUs whose memory the host cannot touch,
# lazy queues): the same checks without a GPU. CUDA builds only.
builddir=${BRAID_BUILDDIR:-$(pwd)}
LD_LIBRARY_PATH=$builddir/tests/mpi/mockcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
exec "$builddir/tests/unit/test_cuda_device"
