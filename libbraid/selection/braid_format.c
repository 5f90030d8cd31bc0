/*
 * braid_format.c - writing selection tables in the rules-file syntax that
 * braid_rules.c reads (sizes, ranges, rows), for error messages, verbose
 * output and contrib/tune.sh.
 */
#include "braid_select.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void braid_size_format(size_t v, char *out, size_t len)
{
    static const char units[] = { '\0', 'K', 'M', 'G' };
    int u = 0;
    if (SIZE_MAX == v) {
        snprintf(out, len, "inf");
        return;
    }
    while (u < 3 && v >= 1024 && 0 == v % 1024) {
        v /= 1024;
        u++;
    }
    if (u) snprintf(out, len, "%zu%c", v, units[u]);
    else snprintf(out, len, "%zu", v);
}

/* an upper bound: "64K-1" for 65535, else as braid_size_format */
static void upper_format(size_t v, char *out, size_t len)
{
    if (SIZE_MAX != v && v >= 1023 && 0 == (v + 1) % 1024) {
        braid_size_format(v + 1, out, len);
        strncat(out, "-1", len - strlen(out) - 1);
    } else {
        braid_size_format(v, out, len);
    }
}

void braid_range_format(size_t lo, size_t hi, int is_comm, char *out, size_t len)
{
    size_t any_lo = is_comm ? 1 : 0, inf = is_comm ? (size_t)INT_MAX : SIZE_MAX;
    char a[32], b[40];
    if (any_lo == lo && inf == hi) {
        snprintf(out, len, "*");
        return;
    }
    if (inf == lo) snprintf(a, sizeof a, "inf");
    else braid_size_format(lo, a, sizeof a);
    if (lo == hi) {
        snprintf(out, len, "%s", a);
        return;
    }
    if (inf == hi) snprintf(b, sizeof b, "inf");
    else if (is_comm) snprintf(b, sizeof b, "%zu", hi);
    else upper_format(hi, b, sizeof b);
    snprintf(out, len, "%s-%s", a, b);
}

size_t braid_table_nlines(const braid_table_t *t)
{
    return 2 + (t ? t->nrules : 0);
}

void braid_table_line(const braid_table_t *t, size_t i, char *buf, size_t len)
{
    if (0 == len) return;
    buf[0] = '\0';
    if (0 == i) { /* the source, kept on one comment line */
        const char *src = t && t->source ? t->source : "(none)";
        size_t n = (size_t)snprintf(buf, len, "# braid selection table: ");
        for (; *src && n + 1 < len; src++)
            buf[n++] = (unsigned char)*src >= 0x20 && *src != 0x7f ? *src : '?';
        if (n < len) buf[n] = '\0';
        return;
    }
    if (1 == i) {
        snprintf(buf, len, "# %-14s %-11s %-15s %-18s %s", "collective", "comm_size",
                 "msg_size", "algorithm", "options");
        return;
    }
    if (NULL == t || i - 2 >= t->nrules) return;
    const braid_rule_t *r = &t->rules[i - 2];
    char comm[32], msg[80], opts[64] = "";
    braid_range_format((size_t)r->comm_min, (size_t)r->comm_max, 1, comm, sizeof comm);
    braid_range_format(r->msg_min, r->msg_max, 0, msg, sizeof msg);
    if (r->choice.params.chunk_bytes) {
        char c[32];
        braid_size_format(r->choice.params.chunk_bytes, c, sizeof c);
        snprintf(opts, sizeof opts, "chunk=%s", c);
    }
    if (r->choice.params.bcube_base < 0)
        snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%sbase=auto",
                 opts[0] ? " " : "");
    else if (r->choice.params.bcube_base)
        snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%sbase=%d",
                 opts[0] ? " " : "", r->choice.params.bcube_base);
    if (opts[0])
        snprintf(buf, len, "%-16s %-11s %-15s %-18s %s", braid_coll_name(r->coll), comm, msg,
                 braid_alg_name(r->coll, r->choice.alg), opts);
    else
        snprintf(buf, len, "%-16s %-11s %-15s %s", braid_coll_name(r->coll), comm, msg,
                 braid_alg_name(r->coll, r->choice.alg));
}

void braid_table_print(const braid_table_t *t, FILE *out)
{
    char *line = malloc(BRAID_TABLE_LINE_MAX);
    if (NULL == line) return;
    for (size_t i = 0; i < braid_table_nlines(t); i++) {
        braid_table_line(t, i, line, BRAID_TABLE_LINE_MAX);
        fprintf(out, "%s\n", line);
    }
    free(line);
}
