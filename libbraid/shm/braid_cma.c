/*
 * braid_cma.c - process_vm_readv behind a plain "copy from that process"
 * (braid_cma.h).
 */
#define _GNU_SOURCE
#include "braid_cma.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>

#if defined(__linux__)
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/uio.h>

void braid_cma_allow_peers(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    if (NULL == f) return;
    int scope = -1;
    if (1 != fscanf(f, "%d", &scope)) scope = -1;
    fclose(f);
#ifdef PR_SET_PTRACER
    if (1 == scope) (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
}

/* one transfer between this process's [local, local + bytes) and pid's
 * [remote, remote + bytes), in the direction write says */
static int cma_move(long pid, unsigned char *local, uint64_t remote, size_t bytes, bool write)
{
    while (bytes > 0) {
        /* the kernel moves at most MAX_RW_COUNT (2 GiB - 4 KiB) per call
         * and stops early at an unmapped page: continue from where it
         * stopped; no progress at all is an error */
        struct iovec l = { local, bytes }, r = { (void *)(uintptr_t)remote, bytes };
        ssize_t n = write ? process_vm_writev((pid_t)pid, &l, 1, &r, 1, 0)
                          : process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
        if (n < 0 && EINTR == errno) continue;
        if (n <= 0) {
            if (0 == n) errno = EFAULT;
            return -1;
        }
        local += n;
        remote += (uint64_t)n;
        bytes -= (size_t)n;
    }
    return 0;
}

int braid_cma_read(long pid, void *dst, uint64_t src, size_t bytes)
{
    return cma_move(pid, dst, src, bytes, false);
}

int braid_cma_write(long pid, uint64_t dst, const void *src, size_t bytes)
{
    return cma_move(pid, (unsigned char *)(uintptr_t)src, dst, bytes, true);
}
#else
void braid_cma_allow_peers(void) {}

int braid_cma_read(long pid, void *dst, uint64_t src, size_t bytes)
{
    (void)pid, (void)dst, (void)src, (void)bytes;
    errno = ENOSYS;
    return -1;
}

int braid_cma_write(long pid, uint64_t dst, const void *src, size_t bytes)
{
    (void)pid, (void)dst, (void)src, (void)bytes;
    errno = ENOSYS;
    return -1;
}
#endif
