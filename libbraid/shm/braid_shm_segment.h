/*
 * braid_shm_segment.h - the POSIX shared-memory segment behind a
 * communicator's shm tier (libbraid/shm/braid_shm.h): created by one rank
 * of the node, opened by the others, and unlinked as soon as every rank has
 * it mapped, so that nothing stays in /dev/shm however the job ends (a
 * killed job's survivors hold only mappings, which the kernel drops with
 * them). Mode 0600: only the job's user can open it in the short window
 * before the unlink. A job killed inside that window leaves the name; the
 * next segment this user creates on the node removes every name whose
 * creating process is gone (names carry uid and pid). No Open MPI, no UCX.
 */
#ifndef BRAID_SHM_SEGMENT_H
#define BRAID_SHM_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>

#define BRAID_SHM_NAME_MAX 64

typedef struct braid_shm_segment {
    void *base;                   /* NULL: not mapped */
    size_t bytes;
    char name[BRAID_SHM_NAME_MAX];
    bool linked;                  /* the name still exists (creator only) */
} braid_shm_segment_t;

/* Create a new zeroed segment of bytes with a fresh name (O_EXCL) and map
 * it; the memory is reserved (posix_fallocate), so a full /dev/shm fails
 * here and not later with SIGBUS. 0 or -1 with a reason in err. */
int braid_shm_segment_create(braid_shm_segment_t *g, size_t bytes, char *err, size_t errlen);

/* Map an existing segment by name; its size must be bytes. */
int braid_shm_segment_open(braid_shm_segment_t *g, const char *name, size_t bytes, char *err,
                           size_t errlen);

/* Remove the name (creator; idempotent). The mappings stay valid. */
void braid_shm_segment_unlink(braid_shm_segment_t *g);

/* Unmap (and unlink if still linked); idempotent. */
void braid_shm_segment_close(braid_shm_segment_t *g);

#endif
