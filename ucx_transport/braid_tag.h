/*
 * braid_tag.h - the one place that lays out braid's 64-bit UCX tags.
 *
 *   63            48 47            32 31      20 19                 0
 *  +----------------+----------------+----------+--------------------+
 *  |  comm id (16)  |   seq (16)     | step(12) |  source rank (20)  |
 *  +----------------+----------------+----------+--------------------+
 *
 *  - comm id: Open MPI's context id of the communicator, identical on every
 *    rank, below BRAID_TAG_GROUP_IDS (communicators whose id does not fit
 *    are left to other components); from BRAID_TAG_GROUP_IDS up, a number
 *    the ranks of a communicator without such an id (Open MPI 5: made from
 *    a group, its agreed id the 128-bit extended cid) agree on when it is
 *    made, free in every process of it. Either way no two live
 *    communicators of a process share one.
 *  - seq: the collective's sequence number on that communicator, so that
 *    consecutive collectives never match each other's messages. Three
 *    spaces, told apart by its top bits: persistent requests (top bit)
 *    take a number when they are made and keep it for every start;
 *    blocking calls and nonblocking posts count apart (the next bit set
 *    for a nonblocking post), each in its own call order. Open MPI posts
 *    some nonblocking collectives from its progress loop (MPI_Comm_idup's
 *    context-id agreement), at points that differ from rank to rank
 *    relative to the blocking calls around them: one counter for both
 *    would give the same number to different calls on different ranks.
 *    Blocking calls on their own are in program order on every rank, and
 *    so are nonblocking posts (as libnbc's tags assume).
 *  - step: the algorithm's step, folded modulo 2^12.
 *  - source: the sender's rank in the communicator, so that a receive matches
 *    one peer only.
 * Receives match all 64 bits. braid owns its ucp worker, so no other tag user
 * shares this space.
 */
#ifndef BRAID_TAG_H
#define BRAID_TAG_H

#include <stdint.h>

#define BRAID_TAG_SRC_BITS 20
#define BRAID_TAG_STEP_BITS 12
#define BRAID_TAG_SEQ_BITS 16
#define BRAID_TAG_CID_BITS 16

#define BRAID_TAG_SRC_SHIFT 0
#define BRAID_TAG_STEP_SHIFT (BRAID_TAG_SRC_SHIFT + BRAID_TAG_SRC_BITS)
#define BRAID_TAG_SEQ_SHIFT (BRAID_TAG_STEP_SHIFT + BRAID_TAG_STEP_BITS)
#define BRAID_TAG_CID_SHIFT (BRAID_TAG_SEQ_SHIFT + BRAID_TAG_SEQ_BITS)

#define BRAID_TAG_FIELD_MASK(bits) ((uint64_t)((1ull << (bits)) - 1))

/* the spaces of the seq field: persistent numbers (the top bit), and
 * below them blocking calls and nonblocking posts (the next bit), each
 * counting modulo BRAID_TAG_SEQ_CALL_MASK + 1 */
#define BRAID_TAG_SEQ_PERSISTENT (1u << (BRAID_TAG_SEQ_BITS - 1))
#define BRAID_TAG_SEQ_NONBLOCKING (1u << (BRAID_TAG_SEQ_BITS - 2))
#define BRAID_TAG_SEQ_CALL_MASK (BRAID_TAG_SEQ_NONBLOCKING - 1u)

#define BRAID_TAG_MAX_CID BRAID_TAG_FIELD_MASK(BRAID_TAG_CID_BITS)
/* the upper half of the comm ids: agreed numbers (above) */
#define BRAID_TAG_GROUP_IDS (1u << (BRAID_TAG_CID_BITS - 1))
#define BRAID_TAG_MAX_RANKS (1u << BRAID_TAG_SRC_BITS)
#define BRAID_TAG_FULL_MASK (~(uint64_t)0)
/* the same limits as plain integers, for comparisons with int and uint32_t */
#define BRAID_TAG_MAX_CID_VALUE 65535u
#define BRAID_TAG_MAX_RANKS_VALUE (1 << 20)

typedef struct braid_tag_fields {
    uint32_t cid, seq, step, src;
} braid_tag_fields_t;

static inline uint64_t braid_tag_make(uint32_t cid, uint32_t seq, uint32_t step, uint32_t src)
{
    return ((uint64_t)cid & BRAID_TAG_FIELD_MASK(BRAID_TAG_CID_BITS)) << BRAID_TAG_CID_SHIFT
         | ((uint64_t)seq & BRAID_TAG_FIELD_MASK(BRAID_TAG_SEQ_BITS)) << BRAID_TAG_SEQ_SHIFT
         | ((uint64_t)step & BRAID_TAG_FIELD_MASK(BRAID_TAG_STEP_BITS)) << BRAID_TAG_STEP_SHIFT
         | ((uint64_t)src & BRAID_TAG_FIELD_MASK(BRAID_TAG_SRC_BITS)) << BRAID_TAG_SRC_SHIFT;
}

static inline braid_tag_fields_t braid_tag_split(uint64_t tag)
{
    braid_tag_fields_t f;
    f.cid = (uint32_t)((tag >> BRAID_TAG_CID_SHIFT) & BRAID_TAG_FIELD_MASK(BRAID_TAG_CID_BITS));
    f.seq = (uint32_t)((tag >> BRAID_TAG_SEQ_SHIFT) & BRAID_TAG_FIELD_MASK(BRAID_TAG_SEQ_BITS));
    f.step = (uint32_t)((tag >> BRAID_TAG_STEP_SHIFT) & BRAID_TAG_FIELD_MASK(BRAID_TAG_STEP_BITS));
    f.src = (uint32_t)((tag >> BRAID_TAG_SRC_SHIFT) & BRAID_TAG_FIELD_MASK(BRAID_TAG_SRC_BITS));
    return f;
}

/* The step as it travels: both transports fold it the same way. */
static inline uint32_t braid_tag_fold_step(uint32_t step)
{
    return step & (uint32_t)BRAID_TAG_FIELD_MASK(BRAID_TAG_STEP_BITS);
}

#endif /* BRAID_TAG_H */
