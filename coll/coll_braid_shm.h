/*
 * coll_braid_shm.h - a communicator's shared-memory tier as its module
 * brings it up and ends it (coll_braid_shm.c; the count that brings it up,
 * mca_coll_braid_shm_tick, is coll_braid_module.h's), and the channels
 * persistent requests hold.
 */
#ifndef MCA_COLL_BRAID_SHM_H
#define MCA_COLL_BRAID_SHM_H

#include "coll_braid_module.h"

BEGIN_C_DECLS

void mca_coll_braid_shm_release(mca_coll_braid_module_t *m);
/* Persistent requests (collective, at init): set the segment up now if
 * it was not tried yet - a persistent request is made to be started many
 * times - then take a channel free on every rank (a small allreduce of
 * the ranks' free masks) and bind s to it. Returns the channel, or -1:
 * no segment, no channels, or none free on some rank (the same answer on
 * every rank). */
int mca_coll_braid_shm_channel_take(mca_coll_braid_module_t *m, braid_shm_t *s);
/* the request that held channel ch is freed: its numbering is kept for
 * the channel's next holder */
void mca_coll_braid_shm_channel_give(mca_coll_braid_module_t *m, int ch, const braid_shm_t *s);

END_C_DECLS

#endif /* MCA_COLL_BRAID_SHM_H */
