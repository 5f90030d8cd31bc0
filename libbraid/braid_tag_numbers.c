/*
 * braid_tag_numbers.c - see braid_tag_numbers.h.
 */
#include "braid_tag_numbers.h"

#include <stdlib.h>

#include "braid_algo.h"

int braid_tag_numbers_init(braid_tag_numbers_t *s, unsigned size)
{
    s->size = size - size % 64;
    s->next = 0;
    s->held = calloc(s->size / 64, sizeof(uint64_t));
    return NULL == s->held ? BRAID_ERR_NOMEM : BRAID_OK;
}

void braid_tag_numbers_release(braid_tag_numbers_t *s)
{
    free(s->held);
    s->held = NULL;
    s->size = s->next = 0;
}

unsigned braid_tag_numbers_windows(const braid_tag_numbers_t *s) { return s->size / 64; }

unsigned braid_tag_numbers_start(const braid_tag_numbers_t *s) { return s->next / 64; }

uint64_t braid_tag_numbers_window(const braid_tag_numbers_t *s, unsigned w)
{
    return __atomic_load_n(&s->held[w], __ATOMIC_ACQUIRE);
}

int braid_tag_numbers_first_free(uint64_t held_anywhere)
{
    return UINT64_MAX == held_anywhere ? -1 : __builtin_ctzll(~held_anywhere);
}

void braid_tag_numbers_take(braid_tag_numbers_t *s, unsigned number)
{
    __atomic_fetch_or(&s->held[number / 64], 1ull << (number % 64), __ATOMIC_ACQ_REL);
    s->next = (number + 1) % s->size;
}

void braid_tag_numbers_give(braid_tag_numbers_t *s, unsigned number)
{
    if (NULL == s->held || number >= s->size) return;
    __atomic_fetch_and(&s->held[number / 64], ~(1ull << (number % 64)), __ATOMIC_ACQ_REL);
}

bool braid_tag_numbers_held(const braid_tag_numbers_t *s, unsigned number)
{
    return NULL != s->held && number < s->size &&
           0 != (braid_tag_numbers_window(s, number / 64) & (1ull << (number % 64)));
}

int braid_tag_numbers_agree(braid_tag_numbers_t *s, unsigned size,
                        int (*or_all)(void *arg, unsigned window, const uint64_t mine[2],
                                      uint64_t all[2]),
                        void *arg, unsigned *number)
{
    bool ok = NULL != s->held || BRAID_OK == braid_tag_numbers_init(s, size);
    unsigned nw = ok ? braid_tag_numbers_windows(s) : size / 64;
    unsigned w0 = ok ? braid_tag_numbers_start(s) : 0;
    for (unsigned i = 0; i < nw; i++) {
        unsigned w = (w0 + i) % nw;
        uint64_t mine[2] = { ok ? braid_tag_numbers_window(s, w) : ~(uint64_t)0, ok ? 0 : 1 };
        uint64_t all[2];
        int rc = or_all(arg, w, mine, all);
        if (0 != rc) return rc;
        if (0 != all[1]) return BRAID_ERR_NOMEM;
        int b = braid_tag_numbers_first_free(all[0]);
        if (b < 0) continue;
        *number = w * 64 + (unsigned)b;
        braid_tag_numbers_take(s, *number);
        return BRAID_OK;
    }
    return BRAID_ERR_ARG;
}
