/*
 * coll_braid_datatype.h - MPI datatypes as the algorithms' bytes
 * (coll_braid_datatype.c): packing, contiguity, the v forms' blocks, and
 * how a reduction's buffers reach the algorithms (direct or staged).
 */
#ifndef MCA_COLL_BRAID_DATATYPE_H
#define MCA_COLL_BRAID_DATATYPE_H

#include "coll_braid_component.h"

#include "ompi/datatype/ompi_datatype.h"

#include "braid_algo.h"

BEGIN_C_DECLS

int mca_coll_braid_pack(const void *userbuf, size_t count, struct ompi_datatype_t *dt,
                        void *packed, size_t bytes);
int mca_coll_braid_unpack(void *userbuf, size_t count, struct ompi_datatype_t *dt,
                          const void *packed, size_t bytes);
/* Inline: every call asks them of its datatypes, and each is a field or
 * two of the datatype (a call apiece cost a v collective at P = 2 about a
 * tenth of its glue's instructions). count elements of dt lie next to
 * each other, no gaps: */
static inline bool mca_coll_braid_is_contiguous(struct ompi_datatype_t *dt, size_t count)
{
    return count <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(dt, (int32_t)count);
}
/* the address of the first byte of a contiguous layout at buf */
static inline void *mca_coll_braid_contig_base(const void *buf, struct ompi_datatype_t *dt)
{
    ptrdiff_t true_lb, true_extent;
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    return (char *)buf + true_lb;
}
static inline size_t mca_coll_braid_type_size(struct ompi_datatype_t *dtype)
{
    size_t size = 0;
    ompi_datatype_type_size(dtype, &size);
    return size;
}

/* The v forms' blocks: block i is counts[i] elements of dt at displs[i]
 * extents from buf (P blocks). */
typedef struct mca_coll_braid_blocks {
    const void *buf;
    const int *counts, *displs;
    struct ompi_datatype_t *dtype;
} mca_coll_braid_blocks_t;
/* MPI lets a displacement be negative: buf need not be where the memory
 * the blocks lie in starts. The lowest displacement of a non-empty block,
 * or 0 when none is below 0 (elements, <= 0): */
ptrdiff_t mca_coll_braid_blocks_low(const mca_coll_braid_blocks_t *b, int P);
/* elements from there to the end of the last non-empty block */
size_t mca_coll_braid_blocks_span(const mca_coll_braid_blocks_t *b, int P);
/* p moved by n extents of dt (NULL and MPI_IN_PLACE stay); inline for
 * the common n = 0 */
void *mca_coll_braid_shift_by(const void *p, ptrdiff_t n, struct ompi_datatype_t *dt);
static inline void *mca_coll_braid_shift(const void *p, ptrdiff_t n, struct ompi_datatype_t *dt)
{
    return 0 == n ? (void *)p : mca_coll_braid_shift_by(p, n, dt);
}
/* The byte sizes of P blocks of tsize-byte elements into bc, and their
 * byte displacements into bd: one after another when packed, else at
 * their displacements counted from the lowest (the return, in elements;
 * 0 when packed). Inline: it runs on every v call, for P = 2 in a few
 * instructions. */
static inline ptrdiff_t mca_coll_braid_blocks_layout(const int *counts, const int *displs, int P,
                                                     size_t tsize, bool packed, size_t *bc,
                                                     size_t *bd)
{
    size_t total = 0;
    if (packed) {
        for (int i = 0; i < P; i++) {
            bc[i] = (counts[i] > 0 ? (size_t)counts[i] : 0) * tsize;
            bd[i] = total;
            total += bc[i];
        }
        return 0;
    }
    /* one pass from 0, and a second only when a block lies below it (the
     * subtraction wraps and comes back); an empty block is read and
     * written nowhere: its displacement may be anything, and 0 keeps it
     * inside the buffer */
    ptrdiff_t lo = 0;
    for (int i = 0; i < P; i++) {
        bc[i] = (counts[i] > 0 ? (size_t)counts[i] : 0) * tsize;
        ptrdiff_t d = bc[i] ? displs[i] : 0;
        bd[i] = (size_t)d * tsize;
        if (d < lo) lo = d;
    }
    for (int i = 0; lo < 0 && i < P; i++)
        if (bc[i]) bd[i] -= (size_t)lo * tsize;
    return lo;
}
/* The blocks of a type that is not dense, one after another in scratch
 * slot `slot` (packed in from the user's buffer when `read`), their
 * sizes and offsets there into bc and bd: mca_coll_braid_blocks_bytes's
 * other half. */
char *mca_coll_braid_blocks_packed(braid_scratch_t *scratch, int slot, const mca_coll_braid_blocks_t *b,
                                   int P, bool read, size_t *bc, size_t *bd, int *rc);
/* The blocks as bytes for the algorithms: their sizes and byte
 * displacements into bc and bd (P entries each), and the bytes: the
 * user's buffer itself, from its lowest block on, when the type is dense
 * (extent = size), else
 * scratch slot `slot` with the blocks one after another, packed in from
 * the user's buffer when `read`. NULL: out of memory or a pack failed (*rc
 * says which). Always inline: the dense case is a v call's every time
 * with a predefined type, and as a call of its own (GCC's choice for a
 * plain inline called twice) its frame cost alltoallv at P = 2 about 60
 * instructions, more than its loop. */
static inline __attribute__((always_inline)) char *mca_coll_braid_blocks_bytes(braid_scratch_t *scratch, int slot,
                                                const mca_coll_braid_blocks_t *b, int P, bool read,
                                                size_t *bc, size_t *bd, bool *packed, int *rc)
{
    /* dense: elements next to each other, so a displacement in elements
     * is one in bytes times the size */
    *packed = !mca_coll_braid_is_contiguous(b->dtype, 2);
    if (*packed) return mca_coll_braid_blocks_packed(scratch, slot, b, P, read, bc, bd, rc);
    ptrdiff_t lo = mca_coll_braid_blocks_layout(b->counts, b->displs, P,
                                                mca_coll_braid_type_size(b->dtype), false, bc, bd);
    return mca_coll_braid_contig_base(mca_coll_braid_shift(b->buf, lo, b->dtype), b->dtype);
}
/* The packed blocks (as mca_coll_braid_blocks_bytes laid them out) back to
 * their places in the user's buffer; gaps and holes keep their values. */
int mca_coll_braid_blocks_unpack(const mca_coll_braid_blocks_t *b, int P, const char *bytes,
                                 const size_t *bc, const size_t *bd);

/* How a reduction's buffers reach the algorithms (coll_braid_datatype.c):
 *  - direct: the datatype is dense (contiguous, extent == size, lb == 0),
 *    so an element is `size` bytes and the user's buffers are used as
 *    they are;
 *  - staged: any other datatype whose elements each lie inside their
 *    extent (pair types, vectors, resized structs). The input is copied
 *    into scratch laid out like the user's buffer, the algorithm runs in
 *    place there with extent-sized elements (holes travel but are never
 *    reduced), and only the datatype's own bytes are copied back, so holes
 *    in the user's receive buffer stay untouched.
 * Anything else goes to the previous module. */
typedef enum { LAYOUT_DIRECT, LAYOUT_STAGED, LAYOUT_UNSUPPORTED } mca_coll_braid_layout_kind_t;
typedef struct mca_coll_braid_layout {
    mca_coll_braid_layout_kind_t kind;
    size_t extent;          /* bytes per element in the algorithm's view */
    ptrdiff_t true_lb;
    size_t true_extent;
} mca_coll_braid_layout_t;
mca_coll_braid_layout_t mca_coll_braid_layout(MPI_Datatype dtype, size_t count);
/* count elements of input `in` copied into scratch slot `slot`, in the
 * user's layout: the scratch base, or NULL when out of memory */
void *mca_coll_braid_stage_in(braid_scratch_t *s, int slot, const mca_coll_braid_layout_t *l,
                              const void *in, size_t count, bool in_dev);
/* the datatype's own bytes of count elements at base copied to userbuf */
int mca_coll_braid_stage_out(braid_scratch_t *s, MPI_Datatype dtype, size_t count, void *userbuf,
                             const void *base, bool out_dev);
/* mca_coll_braid_blocks_span where buf is device memory (what its host
 * copy holds, from buf + low extents on), else 0: host memory needs no
 * copy, and the span's loop over P counts is spared (inline: in a job
 * without CUDA every v call learns that from one load) */
static inline size_t mca_coll_braid_device_span(const mca_coll_braid_blocks_t *b, int P)
{
    return mca_coll_braid_is_device(b->buf) ? mca_coll_braid_blocks_span(b, P) : 0;
}

END_C_DECLS

#endif /* MCA_COLL_BRAID_DATATYPE_H */
