/*
 * braid_tag_numbers.h - the numbers a rank's live requests hold, out of a
 * fixed space, and the rule that picks a new one the same on every rank.
 *
 * Persistent collectives tag their messages with a number of their own
 * (braid_tag.h: the upper half of the sequence field, 32,768 numbers) for
 * as long as they live, and ranks may start them in any order, so two live
 * requests of a communicator must never share one. Which numbers are held
 * differs between ranks (MPI_Request_free is local), so a rank cannot pick
 * alone: at init, a collective call, the ranks OR together their held
 * masks of one 64-number window (braid_tag_numbers_window) and all take the
 * first number free everywhere (braid_tag_numbers_first_free); a full window
 * moves them on to the next, and a space held in full is an error on every
 * rank alike. The search starts after the last number taken, so numbers
 * come round again only after the whole space, like a counter that skips
 * what is held.
 *
 * Take and give are atomic on the mask's words: a request may be freed on
 * one thread while another makes one (inits are ordered by MPI).
 *
 * Pure C: no Open MPI, no UCX.
 */
#ifndef BRAID_TAG_NUMBERS_H
#define BRAID_TAG_NUMBERS_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct braid_tag_numbers {
    uint64_t *held;     /* one bit per number; NULL until the first take */
    unsigned size;      /* numbers in the space, a multiple of 64 */
    unsigned next;      /* where the next search starts */
} braid_tag_numbers_t;

/* An empty set of `size` numbers (a multiple of 64): BRAID_OK, or
 * BRAID_ERR_NOMEM. */
int braid_tag_numbers_init(braid_tag_numbers_t *s, unsigned size);
void braid_tag_numbers_release(braid_tag_numbers_t *s);

/* Windows of 64 numbers in the space, and the one a search starts at. */
unsigned braid_tag_numbers_windows(const braid_tag_numbers_t *s);
unsigned braid_tag_numbers_start(const braid_tag_numbers_t *s);
/* Bit i set: number 64 w + i is held here. */
uint64_t braid_tag_numbers_window(const braid_tag_numbers_t *s, unsigned w);
/* The lowest bit clear in a window's mask held anywhere, or -1. */
int braid_tag_numbers_first_free(uint64_t held_anywhere);

void braid_tag_numbers_take(braid_tag_numbers_t *s, unsigned number);
void braid_tag_numbers_give(braid_tag_numbers_t *s, unsigned number);
bool braid_tag_numbers_held(const braid_tag_numbers_t *s, unsigned number);

/* The whole pick, collective: window by window, or_all(arg, w, mine, all)
 * ORs every rank's {held mask, "could not make its set"} (an MPI code,
 * MPI_SUCCESS = 0, returned as it is when not 0), until a number is free
 * everywhere; *number is taken then. A set that cannot be made (s empty,
 * out of memory) marks every window full and flags the call, which then
 * fails on every rank: BRAID_ERR_NOMEM; every number held anywhere:
 * BRAID_ERR_ARG. s is made of `size` numbers on first use. */
int braid_tag_numbers_agree(braid_tag_numbers_t *s, unsigned size,
                        int (*or_all)(void *arg, unsigned window, const uint64_t mine[2],
                                      uint64_t all[2]),
                        void *arg, unsigned *number);

#ifdef __cplusplus
}
#endif
#endif /* BRAID_TAG_NUMBERS_H */
