/*
 * braid_select.h - the selection table that picks an algorithm per call from
 * the communicator size and the message size, the rules files that override
 * it, and the cost model it was derived from. Pure C: no Open MPI, no UCX.
 *
 * Algorithm ids and names come from the registry (libbraid/braid_registry.h);
 * id 0 is always "auto" (ask the table).
 */
#ifndef BRAID_SELECT_H
#define BRAID_SELECT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "braid_registry.h"

/* ------------------------------------------------------------------ */
/* braid_rules.c: parser; braid_table.c: lookup; braid_format.c: text */
/* ------------------------------------------------------------------ */

/* What the table picks: an algorithm id of the collective and its tunables
 * (chunk_bytes, bcube_base; 0 = the algorithm's default). */
typedef struct braid_choice {
    int alg;
    braid_params_t params;
} braid_choice_t;

/* One row. The message size is one rank's contribution in bytes
 * (count x type size; see libbraid/selection/RULES.md for each collective). */
typedef struct braid_rule {
    braid_coll_t coll;
    int comm_min, comm_max;    /* inclusive; comm_max == INT_MAX: no bound */
    size_t msg_min, msg_max;   /* bytes, inclusive; msg_max == SIZE_MAX: no bound */
    braid_choice_t choice;     /* choice.alg == BRAID_ALG_AUTO: ask the built-in
                                  table, then apply the non-zero params */
    int line;                  /* line in the source, 0 if none */
} braid_rule_t;

/* Rows sorted by (coll, comm_min, msg_min); no two rows of one collective
 * overlap. */
typedef struct braid_table {
    braid_rule_t *rules;
    size_t nrules;
    char *source;              /* file name, or "built-in" */
} braid_table_t;

/* Limits of the rules format (exceeding one is an error). */
#define BRAID_RULES_MAX_LINE  1024      /* characters per line, without '\n' */
#define BRAID_RULES_MAX_RULES 10000
#define BRAID_RULES_MAX_FILE  (4 << 20) /* bytes */
#define BRAID_RULES_MAX_BASE  1024
/* chunk=SIZE: 1..INT_MAX bytes, the range of coll_braid_chunk_size and
 * coll_braid_dbtree_chunk_size */
#define BRAID_RULES_MAX_CHUNK ((size_t)INT_MAX)

/* Parse a rules text (format in braid_rules.c and libbraid/selection/RULES.md).
 * source_name names it in error messages ("rules.txt" -> "rules.txt:7: ...").
 * Return 0 and fill *out (free with braid_table_free), or -1 with *out empty
 * and a one-line message in err (if err != NULL and errlen > 0). */
int braid_rules_parse_string(const char *text, const char *source_name,
                             braid_table_t *out, char *err, size_t errlen);
/* As above with an explicit length (the text need not be NUL-terminated; a
 * NUL byte inside it is an error). */
int braid_rules_parse_buffer(const char *text, size_t len, const char *source_name,
                             braid_table_t *out, char *err, size_t errlen);
int braid_rules_parse_file(const char *path, braid_table_t *out, char *err, size_t errlen);
void braid_table_free(braid_table_t *t);

/* The built-in default table (parsed once, thread-safe, never freed). It
 * covers every collective for every communicator size >= 1 and every size. */
const braid_table_t *braid_table_builtin(void);

/* The row of t that matches, or NULL. */
const braid_rule_t *braid_table_find(const braid_table_t *t, braid_coll_t coll,
                                     int comm_size, size_t msg_bytes);

/* The algorithm for one call. Precedence: forced_alg (> 0, a valid id of coll:
 * coll_braid_<coll>_algorithm) with default params, then the user table
 * (may be NULL; a row with alg auto, or no matching row, falls through), then
 * the built-in table. Uses only its arguments, so every rank that passes the
 * same arguments gets the same choice. Returns a valid id > 0 for every valid
 * coll and comm_size >= 1 (alg 0 only for an invalid coll). */
braid_choice_t braid_select(braid_coll_t coll, int comm_size, size_t msg_bytes,
                            int forced_alg, const braid_table_t *user);

/* The same on a communicator whose shared-memory segment can carry this
 * call (shm true): the shm algorithms (BRAID_OPT_SHM) become choices - a
 * forced one, a user row naming one, and the built-in shm rows, which come
 * before the built-in table. With shm false a forced or user choice of a
 * shm algorithm falls through to the next source, so a communicator
 * without a segment (several nodes, set-up failed, message larger than a
 * slot) always gets a message algorithm; braid_select() is shm false. */
braid_choice_t braid_select_on(braid_coll_t coll, int comm_size, size_t msg_bytes,
                               int forced_alg, const braid_table_t *user, bool shm);

/* The built-in rows of the shared-memory tier (braid_select_on). */
const braid_table_t *braid_table_builtin_shm(void);

/* Write t in the rules-file syntax, one row per line, with a header comment
 * naming t->source; braid_rules_parse_* reads it back into the same rows. */
void braid_table_print(const braid_table_t *t, FILE *out);
/* The same text line by line, for loggers such as opal_output: line 0 and 1
 * are the header comments, line 2 + k is row k; no newline; cut to len. */
#define BRAID_TABLE_LINE_MAX 8192
size_t braid_table_nlines(const braid_table_t *t);
void braid_table_line(const braid_table_t *t, size_t i, char *buf, size_t len);
/* The selection in effect, line by line to line(arg, text): the forced
 * algorithms (forced[coll], BRAID_ALG_AUTO: none), then the rules file's
 * table (NULL: none; source names it), then the built-in table. */
void braid_select_describe(const int *forced, const braid_table_t *rules, const char *source,
                           void (*line)(void *arg, const char *text), void *arg);

/* A rules file parsed into a table of its own (free with
 * braid_table_destroy), or NULL with a one-line message in err. */
braid_table_t *braid_rules_load(const char *path, char *err, size_t errlen);
void braid_table_destroy(braid_table_t *t);

/* Format a size as the rules file writes it: "inf" for SIZE_MAX, else the
 * largest exact K/M/G unit ("64K", "1536", "3M"). */
void braid_size_format(size_t v, char *out, size_t len);

/* Format a comm_size (is_comm) or msg_size range as the rules file writes it:
 * "*", "4", "2-8", "9-inf", "0-64K-1" (upper ends one below a K/M/G unit). */
void braid_range_format(size_t lo, size_t hi, int is_comm, char *out, size_t len);

/* The alpha-beta-gamma cost model the built-in table is derived from
 * (braid_model.c, from the registry's cost functions): estimated
 * microseconds of one call, or a negative value when the model does not
 * consider the algorithm for (coll, P). */
double braid_model_time_us(braid_coll_t coll, int alg, int comm_size, size_t msg_bytes);

#endif /* BRAID_SELECT_H */
