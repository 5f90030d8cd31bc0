/*
 * braid_model.c - the cost model the built-in selection table (braid_table.c)
 * was derived from: each algorithm's alpha-beta-gamma cost, defined next to
 * its steps and bytes in libbraid/algo/ (constants in libbraid/braid_cost.h), read
 * through the registry.
 */
#include "braid_select.h"

double braid_model_time_us(braid_coll_t coll, int alg, int comm_size, size_t msg_bytes)
{
    if (comm_size < 2) return comm_size == 1 ? 0.0 : -1.0;
    const braid_algorithm_t *a = braid_algorithm(coll, alg);
    if (NULL == a) return -1.0;
    return a->cost(comm_size, (double)msg_bytes);
}
