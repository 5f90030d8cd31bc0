/*
 * fuzz_rules.c - libFuzzer target for braid's rules parser: any input must
 * parse or fail with a message, never crash, overrun or leak; whatever parses
 * must be usable for lookup and print back into text that parses to the
 * same table. Built by tests/fuzz/run_fuzz.sh.
 */
#include "braid_select.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int same_table(const braid_table_t *a, const braid_table_t *b)
{
    if (a->nrules != b->nrules) return 0;
    for (size_t i = 0; i < a->nrules; i++) {
        const braid_rule_t *x = &a->rules[i], *y = &b->rules[i];
        if (x->coll != y->coll || x->comm_min != y->comm_min || x->comm_max != y->comm_max
            || x->msg_min != y->msg_min || x->msg_max != y->msg_max
            || x->choice.alg != y->choice.alg
            || x->choice.params.chunk_bytes != y->choice.params.chunk_bytes
            || x->choice.params.bcube_base != y->choice.params.bcube_base)
            return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    braid_table_t t;

    /* the C-string entry point (stops at the first NUL) */
    char *text = malloc(size + 1);
    if (NULL == text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (0 == braid_rules_parse_string(text, "fuzz.rules", &t, err, sizeof err)) {
        static const size_t sizes[] = { 0, 1, 4095, 4096, 65535, 65536, (size_t)1 << 30,
                                        SIZE_MAX };
        for (int c = 0; c < BRAID_COLL_N; c++)
            for (int P = 1; P <= 9; P += 4)
                for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
                    braid_choice_t ch = braid_select((braid_coll_t)c, P, sizes[k], 0, &t);
                    if (ch.alg <= 0) abort(); /* every call gets an algorithm */
                }
        /* print -> parse gives the same table */
        char *out = NULL;
        size_t outlen = 0;
        FILE *f = open_memstream(&out, &outlen);
        if (f) {
            braid_table_print(&t, f);
            fclose(f);
            braid_table_t back;
            if (0 != braid_rules_parse_string(out, "printed", &back, err, sizeof err)) abort();
            if (!same_table(&t, &back)) abort();
            braid_table_free(&back);
            free(out);
        }
    } else if (strncmp(err, "fuzz.rules:", 11) != 0) {
        abort(); /* every error names the source */
    }
    braid_table_free(&t);
    free(text);

    /* the explicit-length entry point (NUL bytes are errors) */
    if (0 == braid_rules_parse_buffer((const char *)data, size, "fuzz.rules", &t, err,
                                      sizeof err))
        (void)braid_select(BRAID_COLL_ALLREDUCE, 2, 1024, 0, &t);
    braid_table_free(&t);
    return 0;
}
