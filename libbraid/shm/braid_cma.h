/*
 * braid_cma.h - single copy between the processes of a node with Linux's
 * cross-memory attach (process_vm_readv and process_vm_writev), the reader
 * and writer behind the shm tier's large messages (libbraid/shm/braid_shm.h,
 * s->read and s->write). It needs the
 * permission to trace the peer (same user; Yama's ptrace_scope 0, or a
 * capability) and a kernel and seccomp profile that allow the call, so the
 * glue tries it once per communicator before using it. No Open MPI, no UCX.
 */
#ifndef BRAID_CMA_H
#define BRAID_CMA_H

#include <stddef.h>
#include <stdint.h>

/* Copy bytes at address src of process pid into dst (partial transfers
 * continued): 0, or -1 with errno set (ENOSYS where there is no such call). */
int braid_cma_read(long pid, void *dst, uint64_t src, size_t bytes);

/* Copy bytes at src of this process to address dst of process pid
 * (process_vm_writev; the same rules): 0, or -1 with errno set. */
int braid_cma_write(long pid, uint64_t dst, const void *src, size_t bytes);

/* Let the job's other processes read this one: under Yama's ptrace_scope 1
 * (Ubuntu's default) only a process's ancestors may, so - as Open MPI's
 * vader does for its CMA path - name any process of the same user as an
 * allowed tracer (PR_SET_PTRACER_ANY). Nothing where Yama is absent or
 * stricter (scopes 2 and 3 need a capability; the probe then fails). */
void braid_cma_allow_peers(void);

#endif
