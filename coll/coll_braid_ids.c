/*
 * coll_braid_ids.c - the numbers the ranks of a communicator agree on in
 * a collective call, over the previous module's allreduce
 * (braid_tag_numbers.h): a persistent request's tag sequence number, and the
 * tag id of a communicator that has no context id every rank agrees on.
 */
#include "coll_braid_component.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

#include "braid_tag.h"

#include "opal/util/output.h"

/* the window's OR over the ranks, by the previous module's allreduce (an
 * init is a collective call, on the application's thread) */
static int or_all(void *arg, unsigned window, const uint64_t mine[2], uint64_t all[2])
{
    mca_coll_braid_module_t *m = arg;
    (void)window;
    return m->prev.coll_allreduce(mine, all, 2, MPI_UINT64_T, MPI_BOR, m->comm,
                                  m->prev.coll_allreduce_module);
}

/* A persistent request's tag number: the first that no live request of
 * any rank holds (braid_tag_numbers.h). */
int mca_coll_braid_persistent_number_take(mca_coll_braid_module_t *m, uint32_t *seq)
{
    unsigned number;
    int rc = braid_tag_numbers_agree(&m->pnums, BRAID_TAG_SEQ_PERSISTENT, or_all, m, &number);
    if (BRAID_OK == rc) {
        *seq = BRAID_TAG_SEQ_PERSISTENT | number;
        return MPI_SUCCESS;
    }
    if (BRAID_ERR_NOMEM == rc) return MPI_ERR_NO_MEM;
    if (BRAID_ERR_ARG != rc) return rc;   /* the allreduce's */
    if (0 == m->bcomm.rank)
        opal_output(0, "braid: %s: all %u tag numbers of persistent collectives are held by live "
                    "requests; free some (MPI_Request_free) before making more",
                    m->comm->c_name, (unsigned)BRAID_TAG_SEQ_PERSISTENT);
    return MPI_ERR_OTHER;
}

void mca_coll_braid_persistent_number_give(mca_coll_braid_module_t *m, uint32_t seq)
{
    braid_tag_numbers_give(&m->pnums, seq & ~BRAID_TAG_SEQ_PERSISTENT);
}

/* The tag id of a communicator that has no context id every rank agrees
 * on (made from a group): BRAID_TAG_GROUP_IDS + the first number that no
 * live communicator of any of its processes holds (braid_tag_numbers.h, over
 * the previous module's allreduce; the search always starts at 0, where
 * every rank starts alike). Ids below BRAID_TAG_GROUP_IDS are context ids,
 * unique in each process, so the two never meet. */
int mca_coll_braid_group_id_take(mca_coll_braid_module_t *m, uint32_t *id)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    unsigned number;
    c->group_ids.next = 0;
    int rc = braid_tag_numbers_agree(&c->group_ids, BRAID_TAG_GROUP_IDS, or_all, m, &number);
    if (BRAID_OK == rc) {
        m->group_id = number + 1;
        *id = BRAID_TAG_GROUP_IDS + number;
        return OMPI_SUCCESS;
    }
    opal_output_verbose(1, c->output, "braid: %s: no tag id free on every rank (%s); braid "
                        "disabled on it", m->comm->c_name,
                        BRAID_ERR_ARG == rc ? "all held" : "no memory or no allreduce");
    return OMPI_ERROR;
}
