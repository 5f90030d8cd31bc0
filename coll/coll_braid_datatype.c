/*
 * coll_braid_datatype.c - moving user buffers of any datatype to and from
 * braid's contiguous byte view (Open MPI's convertor: glue only), and the
 * reductions' layouts (coll_braid_datatype.h).
 */
#include "coll_braid_datatype.h"
#include "coll_braid_cuda.h"

#include "opal/datatype/opal_convertor.h"
#include "ompi/datatype/ompi_datatype.h"

static int convert(void *userbuf, size_t count, ompi_datatype_t *dt, void *packed, size_t bytes,
                   bool pack)
{
    opal_convertor_t conv;
    struct iovec iov = { .iov_base = packed, .iov_len = bytes };
    uint32_t iov_count = 1;
    size_t max_data = bytes;
    int rc;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    if (pack) {
        rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count,
                                                      userbuf, 0, &conv);
        if (OPAL_SUCCESS == rc) rc = opal_convertor_pack(&conv, &iov, &iov_count, &max_data);
    } else {
        rc = opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dt->super, count,
                                                      userbuf, 0, &conv);
        if (OPAL_SUCCESS == rc) rc = opal_convertor_unpack(&conv, &iov, &iov_count, &max_data);
    }
    OBJ_DESTRUCT(&conv);
    /* pack/unpack return 1 when the whole buffer was converted */
    return (rc < 0 || max_data != bytes) ? OMPI_ERROR : OMPI_SUCCESS;
}

int mca_coll_braid_pack(const void *userbuf, size_t count, ompi_datatype_t *dt, void *packed,
                        size_t bytes)
{
    return convert((void *)userbuf, count, dt, packed, bytes, true);
}

int mca_coll_braid_unpack(void *userbuf, size_t count, ompi_datatype_t *dt, const void *packed,
                          size_t bytes)
{
    return convert(userbuf, count, dt, (void *)packed, bytes, false);
}

/* ------------------------------------------------------------------ */
/* reduction layouts                                                   */
/* ------------------------------------------------------------------ */

mca_coll_braid_layout_t mca_coll_braid_layout(MPI_Datatype dtype, size_t count)
{
    mca_coll_braid_layout_t l = { LAYOUT_UNSUPPORTED, 0, 0, 0 };
    size_t size = 0;
    ptrdiff_t lb, extent, true_lb, true_extent;
    ompi_datatype_type_size(dtype, &size);
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    l.true_lb = true_lb;
    l.true_extent = (size_t)true_extent;
    if (extent <= 0) return l;
    l.extent = (size_t)extent;
    if ((size_t)extent == size && 0 == lb && 0 == true_lb &&
        mca_coll_braid_is_contiguous(dtype, count > 0 ? count : 1)) {
        l.kind = LAYOUT_DIRECT;
    } else if (true_lb >= 0 && true_lb + true_extent <= extent) {
        l.kind = LAYOUT_STAGED;
    }
    return l;
}

/* bytes spanned by count elements, from the first element's first byte */
static size_t span_bytes(const mca_coll_braid_layout_t *l, size_t count)
{
    return count ? (count - 1) * l->extent + l->true_extent : 0;
}

void *mca_coll_braid_stage_in(braid_scratch_t *s, int slot, const mca_coll_braid_layout_t *l,
                              const void *in, size_t count, bool in_dev)
{
    char *base = braid_scratch_get(s, slot, count * l->extent + 64);
    if (NULL == base) return NULL;
    if (NULL != in && count > 0 &&
        BRAID_OK != mca_coll_braid_copy(base + l->true_lb, (const char *)in + l->true_lb,
                                        span_bytes(l, count), in_dev))
        return NULL;
    return base;
}

/* Device buffers: read the span into host scratch, write the datatype's
 * bytes there, and copy the span back (holes keep their values). */
int mca_coll_braid_stage_out(braid_scratch_t *s, MPI_Datatype dtype, size_t count, void *userbuf,
                             const void *base, bool out_dev)
{
    char *dst = userbuf;
    mca_coll_braid_layout_t l = mca_coll_braid_layout(dtype, count);
    size_t span = span_bytes(&l, count);
    if (out_dev) {
        dst = braid_scratch_get(s, BRAID_SCRATCH_GLUE_OUT, count * l.extent + 64);
        if (NULL == dst) return MPI_ERR_NO_MEM;
        if (BRAID_OK != mca_coll_braid_copy(dst + l.true_lb, (char *)userbuf + l.true_lb, span, true))
            return MPI_ERR_OTHER;
    }
    int rc = ompi_datatype_copy_content_same_ddt(dtype, count, dst, (char *)base);
    if (OMPI_SUCCESS != rc) return MPI_ERR_INTERN;
    if (out_dev &&
        BRAID_OK != mca_coll_braid_copy((char *)userbuf + l.true_lb, dst + l.true_lb, span, true))
        return MPI_ERR_OTHER;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* the v forms' blocks                                                 */
/* ------------------------------------------------------------------ */

static size_t elems(int n) { return n > 0 ? (size_t)n : 0; }

ptrdiff_t mca_coll_braid_blocks_low(const mca_coll_braid_blocks_t *b, int P)
{
    ptrdiff_t lo = 0;
    for (int i = 0; i < P; i++)
        if (b->counts[i] > 0 && b->displs[i] < lo) lo = b->displs[i];
    return lo;
}

size_t mca_coll_braid_blocks_span(const mca_coll_braid_blocks_t *b, int P)
{
    ptrdiff_t end = 0;
    for (int i = 0; i < P; i++) {
        ptrdiff_t e = (ptrdiff_t)b->displs[i] + (ptrdiff_t)elems(b->counts[i]);
        if (b->counts[i] > 0 && e > end) end = e;
    }
    return (size_t)(end - mca_coll_braid_blocks_low(b, P));
}

void *mca_coll_braid_shift_by(const void *p, ptrdiff_t n, struct ompi_datatype_t *dt)
{
    if (NULL == p || MPI_IN_PLACE == p) return (void *)p;
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(dt, &lb, &extent);
    return (char *)p + n * (ptrdiff_t)extent;
}

/* where block i starts in the user's buffer */
static char *block_at(const mca_coll_braid_blocks_t *b, int i)
{
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(b->dtype, &lb, &extent);
    return (char *)b->buf + (ptrdiff_t)b->displs[i] * extent;
}

char *mca_coll_braid_blocks_packed(braid_scratch_t *scratch, int slot, const mca_coll_braid_blocks_t *b,
                                   int P, bool read, size_t *bc, size_t *bd, int *rc)
{
    size_t total = 0;
    (void)mca_coll_braid_blocks_layout(b->counts, b->displs, P, mca_coll_braid_type_size(b->dtype),
                                       true, bc, bd);
    for (int i = 0; i < P; i++) total += bc[i];
    char *tmp = braid_scratch_get(scratch, slot, total ? total : 1);
    if (NULL == tmp) {
        *rc = MPI_ERR_NO_MEM;
        return NULL;
    }
    for (int i = 0; read && i < P; i++)
        if (bc[i] && OMPI_SUCCESS != mca_coll_braid_pack(block_at(b, i), elems(b->counts[i]), b->dtype,
                                                         tmp + bd[i], bc[i])) {
            *rc = MPI_ERR_INTERN;
            return NULL;
        }
    return tmp;
}

int mca_coll_braid_blocks_unpack(const mca_coll_braid_blocks_t *b, int P, const char *bytes,
                                 const size_t *bc, const size_t *bd)
{
    for (int i = 0; i < P; i++)
        if (bc[i] && OMPI_SUCCESS != mca_coll_braid_unpack(block_at(b, i), elems(b->counts[i]), b->dtype,
                                                           bytes + bd[i], bc[i]))
            return MPI_ERR_INTERN;
    return MPI_SUCCESS;
}
