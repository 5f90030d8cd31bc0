/*
 * coll_braid_entry.h - the MPI entry points braid installs, one family per
 * file (coll_braid_<family>.c): blocking, nonblocking and persistent.
 */
#ifndef MCA_COLL_BRAID_ENTRY_H
#define MCA_COLL_BRAID_ENTRY_H

#include "coll_braid_request.h"

BEGIN_C_DECLS

/* blocking */
int mca_coll_braid_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_braid_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_braid_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);
int mca_coll_braid_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module);
int mca_coll_braid_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module);
int mca_coll_braid_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_braid_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* nonblocking */
int mca_coll_braid_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module);
int mca_coll_braid_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module);
int mca_coll_braid_iallreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module);
int mca_coll_braid_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module);
int mca_coll_braid_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module);
/* persistent */
int mca_coll_braid_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_allreduce_init(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_reduce_init(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             struct ompi_communicator_t *comm,
                                             struct ompi_info_t *info, ompi_request_t **request,
                                             mca_coll_base_module_t *module);
int mca_coll_braid_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module);

END_C_DECLS

#endif /* MCA_COLL_BRAID_ENTRY_H */
