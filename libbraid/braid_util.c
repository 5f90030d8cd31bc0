/*
 * braid_util.c - helpers shared by every algorithm: blocking exchanges built
 * on the transport's nonblocking calls, the scratch cache, input copy.
 */
#include "braid_algo.h"

#include <stdlib.h>
#include <string.h>

int braid_send(braid_comm_t *c, int peer, braid_step_t step,
               const void *buf, size_t len)
{
    braid_req_t r = NULL;
    int rc = braid_isend(c, peer, step, buf, len, &r);
    if (BRAID_OK != rc) return rc;
    return braid_waitall(c, 1, &r);
}

int braid_recv(braid_comm_t *c, int peer, braid_step_t step,
               void *buf, size_t len)
{
    braid_req_t r = NULL;
    int rc = braid_irecv(c, peer, step, buf, len, &r);
    if (BRAID_OK != rc) return rc;
    return braid_waitall(c, 1, &r);
}

int braid_sendrecv(braid_comm_t *c,
                   int dst, braid_step_t sstep, const void *sbuf, size_t slen,
                   int src, braid_step_t rstep, void *rbuf, size_t rlen)
{
    braid_req_t r[2] = { NULL, NULL };
    int rc = braid_irecv(c, src, rstep, rbuf, rlen, &r[0]);
    if (BRAID_OK == rc) rc = braid_isend(c, dst, sstep, sbuf, slen, &r[1]);
    int wrc = braid_waitall(c, 2, r);
    return BRAID_OK != rc ? rc : wrc;
}

void *braid_scratch_get(braid_scratch_t *s, int slot, size_t bytes)
{
    if (slot < 0 || slot >= BRAID_SCRATCH_SLOTS) return NULL;
    if (bytes == 0) bytes = 1;
    if (s->len[slot] >= bytes) return s->buf[slot];
    if (s->fail_alloc) {
        if (0 == s->allocs_before_failure) return NULL;
        s->allocs_before_failure--;
    }
    free(s->buf[slot]);
    s->buf[slot] = NULL;
    s->len[slot] = 0;
    /* 64-byte alignment keeps the reduction kernels on aligned vectors */
    size_t rounded = (bytes + 63) & ~(size_t)63;
    void *p = NULL;
    if (0 != posix_memalign(&p, 64, rounded)) return NULL;
    s->buf[slot] = p;
    s->len[slot] = rounded;
    return p;
}

void braid_scratch_release(braid_scratch_t *s)
{
    for (int i = 0; i < BRAID_SCRATCH_SLOTS; i++) {
        free(s->buf[i]);
        s->buf[i] = NULL;
        s->len[i] = 0;
    }
}

void braid_copy_input(const braid_coll_args_t *a, size_t bytes)
{
    if (NULL != a->sbuf && a->sbuf != a->rbuf && bytes > 0)
        braid_copy(a->rbuf, a->sbuf, bytes);
}

void braid_copy_pieces(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    for (size_t at = 0; at < n; at += BRAID_COPY_PIECE)
        memcpy(d + at, s + at, n - at < BRAID_COPY_PIECE ? n - at : BRAID_COPY_PIECE);
}
