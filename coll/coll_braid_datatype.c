/*
 * coll_braid_datatype.c - moving user buffers of any datatype to and from
 * braid's contiguous byte view (Open MPI's convertor: glue only).
 */
#include "coll_braid.h"

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

bool mca_coll_braid_is_contiguous(ompi_datatype_t *dt, size_t count)
{
    return count <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(dt, (int32_t)count);
}

/* Address of the first byte of a contiguous layout. */
void *mca_coll_braid_contig_base(const void *buf, ompi_datatype_t *dt)
{
    ptrdiff_t true_lb, true_extent;
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    return (char *)buf + true_lb;
}

size_t mca_coll_braid_type_size(struct ompi_datatype_t *dtype)
{
    size_t size = 0;
    ompi_datatype_type_size(dtype, &size);
    return size;
}
