/*
 * braid_rules.c - parser of braid's rules files (the user's selection table,
 * coll_braid_rules_file=PATH). Pure C. The format, also in libbraid/selection/RULES.md:
 *
 *   # collective   comm_size   msg_size     algorithm          [key=value ...]
 *   allreduce      2           0-64K        halving_doubling
 *   allreduce      2-8         64K-inf      ring_chunked       chunk=1M
 *   allreduce      9-inf       *            bcube              base=4
 *   bcast          *           0-8K         binomial
 *
 *  - one rule per line; fields separated by blanks or tabs; '#' starts a
 *    comment that runs to the end of the line; blank lines are ignored;
 *    lines hold at most BRAID_RULES_MAX_LINE characters;
 *  - collective: barrier | bcast | allreduce | reduce | reduce_scatter |
 *    allgather;
 *  - comm_size (ranks in the communicator) and msg_size (bytes one rank
 *    contributes, count x type size) are each a single value `n`, an inclusive
 *    range `a-b`, or `*` (any). A value is a decimal number with an optional
 *    suffix K, M or G (powers of 1024, either case) or `inf` (no bound).
 *    comm_size values are >= 1 and at most INT_MAX (= inf);
 *  - algorithm: a name from braid_alg_names(coll); `auto` means "what the
 *    built-in table picks", with the row's key=value options applied to it;
 *  - options: chunk=SIZE (1..BRAID_RULES_MAX_CHUNK bytes, with suffixes; the
 *    algorithms with BRAID_OPT_CHUNK or BRAID_OPT_TREE_CHUNK) and base=N
 *    (2..BRAID_RULES_MAX_BASE or auto; BRAID_OPT_BASE); each at most once per
 *    row;
 *  - two rows of one collective must not overlap (no (P, size) matched by
 *    both); gaps are allowed: sizes no row matches use the built-in table.
 *
 * Every error is reported as "<source>:<line>: <what>" naming the offending
 * token and what was expected, and the whole table is rejected.
 */
#include "braid_select.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 6 /* collective comm_size msg_size algorithm + 2 options */
#define QUOTE_MAX 64 /* characters of a token quoted in a message */

typedef enum { KIND_COMM, KIND_MSG } range_kind_t;

typedef struct parser {
    const char *source;
    char *err;
    size_t errlen;
    int line;
    braid_rule_t *rules;
    size_t n, cap;
} parser_t;

/* ------------------------------------------------------------------ */
/* errors                                                              */
/* ------------------------------------------------------------------ */

static int fail(parser_t *p, const char *fmt, ...)
{
    if (NULL == p->err || 0 == p->errlen) return -1;
    int n = p->line > 0 ? snprintf(p->err, p->errlen, "%s:%d: ", p->source, p->line)
                        : snprintf(p->err, p->errlen, "%s: ", p->source);
    if (n < 0 || (size_t)n >= p->errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* A token as quoted in messages: non-printable bytes become '?', and long
 * tokens are cut to QUOTE_MAX characters followed by "...". */
typedef struct { char s[QUOTE_MAX + 4]; } quoted_t;

static quoted_t quote(const char *tok)
{
    quoted_t q;
    size_t i = 0;
    for (; i < QUOTE_MAX && tok[i]; i++) {
        unsigned char ch = (unsigned char)tok[i];
        q.s[i] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (tok[i]) {
        memcpy(q.s + i, "...", 3);
        i += 3;
    }
    q.s[i] = '\0';
    return q;
}

/* ------------------------------------------------------------------ */
/* values and ranges                                                   */
/* ------------------------------------------------------------------ */

enum { NUM_OK = 0, NUM_SYNTAX = -1, NUM_TOO_LARGE = -2 };

/* decimal digits with an optional K/M/G suffix (powers of 1024) */
static int parse_number(const char *s, size_t *v)
{
    size_t x = 0;
    const char *q = s;
    if (*q < '0' || *q > '9') return NUM_SYNTAX;
    int big = 0;
    for (; *q >= '0' && *q <= '9'; q++) {
        size_t d = (size_t)(*q - '0');
        if (x > (SIZE_MAX - d) / 10) big = 1;
        else x = x * 10 + d;
    }
    size_t mult = 1;
    switch (*q) {
    case 'k': case 'K': mult = (size_t)1 << 10; q++; break;
    case 'm': case 'M': mult = (size_t)1 << 20; q++; break;
    case 'g': case 'G': mult = (size_t)1 << 30; q++; break;
    default: break;
    }
    if (*q) return NUM_SYNTAX;
    if (big || x > SIZE_MAX / mult) return NUM_TOO_LARGE;
    *v = x * mult;
    return NUM_OK;
}

static int is_inf(const char *s)
{
    return (s[0] == 'i' || s[0] == 'I') && (s[1] == 'n' || s[1] == 'N')
        && (s[2] == 'f' || s[2] == 'F') && s[3] == '\0';
}

/* one end of a comm_size or msg_size range; whole is the full token */
static int parse_bound(parser_t *p, range_kind_t kind, const char *part, const char *whole,
                       size_t *v)
{
    quoted_t qp = quote(part), qw = quote(whole);
    char in[QUOTE_MAX + 16] = "";
    if (part != whole) snprintf(in, sizeof in, " in '%s'", qw.s);

    if (is_inf(part)) {
        *v = KIND_COMM == kind ? (size_t)INT_MAX : SIZE_MAX;
        return 0;
    }
    int rc = parse_number(part, v);
    if (KIND_MSG == kind) {
        if (NUM_SYNTAX == rc)
            return fail(p, "bad size '%s'%s (expected a number with optional K/M/G suffix, "
                        "'inf' or '*')", qp.s, in);
        if (NUM_TOO_LARGE == rc)
            return fail(p, "bad size '%s'%s (too large; write 'inf' for no upper bound)",
                        qp.s, in);
        return 0;
    }
    if (NUM_SYNTAX == rc || (NUM_OK == rc && 0 == *v))
        return fail(p, "bad communicator size '%s'%s (expected an integer >= 1 with optional "
                    "K/M/G suffix, 'inf' or '*')", qp.s, in);
    if (NUM_TOO_LARGE == rc || *v > (size_t)INT_MAX)
        return fail(p, "bad communicator size '%s'%s (larger than %d; write 'inf' for no "
                    "upper bound)", qp.s, in, INT_MAX);
    return 0;
}

/* the upper end of a range: a bound, or `n-d` (n minus d: "64K-1" = 65535) */
static int parse_upper(parser_t *p, range_kind_t kind, char *part, const char *whole, size_t *v)
{
    char *dash = strchr(part, '-');
    if (NULL == dash) return parse_bound(p, kind, part, whole, v);
    *dash = '\0';
    const char *sub = dash + 1;
    quoted_t qp = quote(part), qs = quote(sub), qw = quote(whole);
    size_t d = 0;
    if (is_inf(part))
        return fail(p, "bad size 'inf-%s' in '%s' (nothing can be subtracted from 'inf')", qs.s,
                    qw.s);
    if (parse_bound(p, kind, part, whole, v)) return -1;
    if (NUM_OK != parse_number(sub, &d))
        return fail(p, "bad size '%s' in '%s' (expected a number with optional K/M/G suffix "
                    "after '%s-')", qs.s, qw.s, qp.s);
    if (d > *v || (KIND_COMM == kind && d == *v))
        return fail(p, "bad %s '%s-%s' in '%s' (less than %s)",
                    KIND_COMM == kind ? "communicator size" : "size", qp.s, qs.s, qw.s,
                    KIND_COMM == kind ? "1" : "0");
    *v -= d;
    return 0;
}

/* `*`, `n`, `a-b` or `a-n-d` into [lo, hi] */
static int parse_range(parser_t *p, range_kind_t kind, const char *tok, size_t *lo, size_t *hi)
{
    const char *what = KIND_COMM == kind ? "comm_size" : "msg_size";
    if (0 == strcmp(tok, "*")) {
        *lo = KIND_COMM == kind ? 1 : 0;
        *hi = KIND_COMM == kind ? (size_t)INT_MAX : SIZE_MAX;
        return 0;
    }
    const char *dash = strchr(tok, '-');
    if (NULL == dash) {
        if (parse_bound(p, kind, tok, tok, lo)) return -1;
        *hi = *lo;
        return 0;
    }
    char a[BRAID_RULES_MAX_LINE + 1], b[BRAID_RULES_MAX_LINE + 1];
    size_t la = (size_t)(dash - tok), lb = strlen(dash + 1);
    if (la > BRAID_RULES_MAX_LINE || lb > BRAID_RULES_MAX_LINE) return -1; /* cannot happen */
    memcpy(a, tok, la);
    a[la] = '\0';
    memcpy(b, dash + 1, lb + 1);
    if (parse_bound(p, kind, a, tok, lo) || parse_upper(p, kind, b, tok, hi)) return -1;
    if (*lo > *hi) {
        quoted_t q = quote(tok);
        return fail(p, "bad %s range '%s' (min > max)", what, q.s);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* options                                                             */
/* ------------------------------------------------------------------ */

typedef enum { KEY_CHUNK, KEY_BASE, KEY_N } key_t_;
static const char *const key_names[KEY_N] = { "chunk", "base" };

/* does the option apply to (coll, alg)? The registry's option keys say
 * (braid_registry.h: chunk = BRAID_OPT_CHUNK or BRAID_OPT_TREE_CHUNK, base =
 * BRAID_OPT_BASE); auto takes every option */
static int key_applies(key_t_ key, braid_coll_t coll, int alg)
{
    if (BRAID_ALG_AUTO == alg) return 1;
    const braid_algorithm_t *a = braid_algorithm(coll, alg);
    if (NULL == a) return 0;
    switch (key) {
    case KEY_CHUNK: return 0 != (a->options & (BRAID_OPT_CHUNK | BRAID_OPT_TREE_CHUNK));
    case KEY_BASE: return 0 != (a->options & BRAID_OPT_BASE);
    default: return 0;
    }
}

static int parse_option(parser_t *p, const char *tok, braid_rule_t *r, int *seen)
{
    quoted_t qt = quote(tok);
    const char *eq = strchr(tok, '=');
    if (NULL == eq) return fail(p, "expected key=value after the algorithm, got '%s'", qt.s);
    size_t klen = (size_t)(eq - tok);
    const char *val = eq + 1;
    int key = -1;
    for (int k = 0; k < KEY_N; k++)
        if (strlen(key_names[k]) == klen && 0 == strncmp(tok, key_names[k], klen)) key = k;
    if (key < 0) {
        char k[QUOTE_MAX + 1];
        size_t kl = klen < QUOTE_MAX ? klen : QUOTE_MAX;
        memcpy(k, tok, kl);
        k[kl] = '\0';
        quoted_t qk = quote(k);
        return fail(p, "unknown key '%s'%s in '%s'; valid: chunk | base", qk.s,
                    kl < klen ? "..." : "", qt.s);
    }
    if (seen[key]) return fail(p, "duplicate key '%s' in '%s'", key_names[key], qt.s);
    seen[key] = 1;

    const char *coll = braid_coll_name(r->coll), *alg = braid_alg_name(r->coll, r->choice.alg);
    if (!key_applies((key_t_)key, r->coll, r->choice.alg)) {
        char takes[32] = "";
        for (int k = 0; k < KEY_N; k++) {
            if (!key_applies((key_t_)k, r->coll, r->choice.alg)) continue;
            if (takes[0]) strcat(takes, ", ");
            strcat(takes, key_names[k]);
        }
        return fail(p, "key '%s' does not apply to %s %s (%s%s)", key_names[key], coll, alg,
                    takes[0] ? "it takes: " : "it takes no keys", takes);
    }

    quoted_t qv = quote(val);
    size_t v = 0;
    int rc = is_inf(val) ? NUM_SYNTAX : parse_number(val, &v);
    if (KEY_CHUNK == key) {
        if (NUM_OK != rc || 0 == v || v > BRAID_RULES_MAX_CHUNK)
            return fail(p, "bad value '%s' for chunk (expected a size in bytes from 1 to %zu "
                        "with optional K/M/G suffix)", qv.s, BRAID_RULES_MAX_CHUNK);
        r->choice.params.chunk_bytes = v;
    } else if (0 == strcmp(val, "auto")) {
        r->choice.params.bcube_base = -1;   /* BRAID_BCUBE_AUTO: two groups from P's factors */
    } else {
        if (NUM_OK != rc || v < 2 || v > BRAID_RULES_MAX_BASE)
            return fail(p, "bad value '%s' for base (expected an integer from 2 to %d, or auto)",
                        qv.s, BRAID_RULES_MAX_BASE);
        r->choice.params.bcube_base = (int)v;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* rows                                                                */
/* ------------------------------------------------------------------ */

static int check_overlap(parser_t *p, const braid_rule_t *r)
{
    for (size_t i = 0; i < p->n; i++) {
        const braid_rule_t *o = &p->rules[i];
        if (o->coll != r->coll) continue;
        if (r->comm_max < o->comm_min || o->comm_max < r->comm_min) continue;
        if (r->msg_max < o->msg_min || o->msg_max < r->msg_min) continue;
        char c1[64], c2[64], m1[64], m2[64];
        braid_range_format((size_t)r->comm_min, (size_t)r->comm_max, 1, c1, sizeof c1);
        braid_range_format((size_t)o->comm_min, (size_t)o->comm_max, 1, c2, sizeof c2);
        braid_range_format(r->msg_min, r->msg_max, 0, m1, sizeof m1);
        braid_range_format(o->msg_min, o->msg_max, 0, m2, sizeof m2);
        return fail(p, "%s rule overlaps the rule on line %d (comm_size %s vs %s, msg_size %s "
                    "vs %s); rows of one collective must not overlap",
                    braid_coll_name(r->coll), o->line, c1, c2, m1, m2);
    }
    return 0;
}

static int add_rule(parser_t *p, const braid_rule_t *r)
{
    if (p->n >= BRAID_RULES_MAX_RULES)
        return fail(p, "too many rules (at most %d)", BRAID_RULES_MAX_RULES);
    if (check_overlap(p, r)) return -1;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        braid_rule_t *n = realloc(p->rules, cap * sizeof(*n));
        if (NULL == n) return fail(p, "out of memory");
        p->rules = n;
        p->cap = cap;
    }
    p->rules[p->n++] = *r;
    return 0;
}

static int is_blank(char ch)
{
    return ' ' == ch || '\t' == ch || '\r' == ch || '\v' == ch || '\f' == ch;
}

/* the next blank-separated token of *s (terminated in place), or NULL */
static char *next_token(char **s)
{
    char *q = *s;
    while (is_blank(*q)) q++;
    if ('\0' == *q) return NULL;
    char *tok = q;
    while (*q && !is_blank(*q)) q++;
    if (*q) *q++ = '\0';
    *s = q;
    return tok;
}

/* one line, NUL-terminated and writable (comments already cut) */
static int parse_line(parser_t *p, char *s)
{
    char *tok[MAX_FIELDS];
    int nt = 0;
    for (char *q = next_token(&s); q; q = next_token(&s)) {
        if (nt == MAX_FIELDS) {
            quoted_t qq = quote(q);
            return fail(p, "too many fields at '%s' (expected: collective comm_size msg_size "
                        "algorithm and at most %d key=value options)", qq.s, MAX_FIELDS - 4);
        }
        tok[nt++] = q;
    }
    if (0 == nt) return 0;
    if (nt < 4)
        return fail(p, "too few fields (%d; expected: collective comm_size msg_size algorithm "
                    "[key=value ...])", nt);

    braid_rule_t r;
    memset(&r, 0, sizeof r);
    r.line = p->line;
    int coll = -1;
    for (int c = 0; c < BRAID_COLL_N; c++)
        if (0 == strcmp(tok[0], braid_coll_name((braid_coll_t)c))) coll = c;
    if (coll < 0) {
        quoted_t q = quote(tok[0]);
        char valid[256] = "";
        for (int c = 0; c < BRAID_COLL_N; c++)
            snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s%s", c ? " | " : "",
                     braid_coll_name((braid_coll_t)c));
        return fail(p, "unknown collective '%s'; valid: %s", q.s, valid);
    }
    r.coll = (braid_coll_t)coll;

    size_t lo, hi;
    if (parse_range(p, KIND_COMM, tok[1], &lo, &hi)) return -1;
    r.comm_min = (int)lo;
    r.comm_max = (int)hi;
    if (parse_range(p, KIND_MSG, tok[2], &r.msg_min, &r.msg_max)) return -1;

    r.choice.alg = braid_alg_lookup(r.coll, tok[3]);
    if (r.choice.alg < 0) {
        char valid[256];
        quoted_t q = quote(tok[3]);
        braid_alg_names_joined(r.coll, valid, sizeof valid);
        return fail(p, "unknown algorithm '%s' for %s; valid: %s", q.s, braid_coll_name(r.coll),
                    valid);
    }
    int seen[KEY_N] = { 0 };
    for (int i = 4; i < nt; i++)
        if (parse_option(p, tok[i], &r, seen)) return -1;
    return add_rule(p, &r);
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int cmp_rule(const void *x, const void *y)
{
    const braid_rule_t *a = x, *b = y;
    if (a->coll != b->coll) return a->coll < b->coll ? -1 : 1;
    if (a->comm_min != b->comm_min) return a->comm_min < b->comm_min ? -1 : 1;
    if (a->msg_min != b->msg_min) return a->msg_min < b->msg_min ? -1 : 1;
    return 0;
}

int braid_rules_parse_buffer(const char *text, size_t len, const char *source_name,
                             braid_table_t *out, char *err, size_t errlen)
{
    parser_t p = { source_name ? source_name : "rules", err, errlen, 0, NULL, 0, 0 };
    char line[BRAID_RULES_MAX_LINE + 1];
    if (err && errlen) err[0] = '\0';
    if (NULL == out) return -1;
    memset(out, 0, sizeof *out);
    if (NULL == text) len = 0;

    size_t pos = 0;
    if (len >= 3 && 0 == memcmp(text, "\xef\xbb\xbf", 3)) pos = 3; /* UTF-8 byte order mark */
    while (pos < len) {
        p.line++;
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + (nl ? 1 : 0);
        if (n > BRAID_RULES_MAX_LINE) {
            fail(&p, "line too long (%zu characters; at most %d)", n, BRAID_RULES_MAX_LINE);
            goto error;
        }
        if (memchr(start, '\0', n)) {
            fail(&p, "NUL byte in the line (expected text)");
            goto error;
        }
        memcpy(line, start, n);
        line[n] = '\0';
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        if (parse_line(&p, line)) goto error;
    }

    if (p.n) qsort(p.rules, p.n, sizeof(*p.rules), cmp_rule);
    out->source = dup_string(p.source);
    if (NULL == out->source) {
        p.line = 0;
        fail(&p, "out of memory");
        goto error;
    }
    out->rules = p.rules;
    out->nrules = p.n;
    return 0;

error:
    free(p.rules);
    memset(out, 0, sizeof *out);
    return -1;
}

int braid_rules_parse_string(const char *text, const char *source_name, braid_table_t *out,
                             char *err, size_t errlen)
{
    return braid_rules_parse_buffer(text, text ? strlen(text) : 0, source_name, out, err, errlen);
}

int braid_rules_parse_file(const char *path, braid_table_t *out, char *err, size_t errlen)
{
    parser_t p = { path ? path : "(null)", err, errlen, 0, NULL, 0, 0 };
    if (out) memset(out, 0, sizeof *out);
    if (NULL == path || NULL == out) return fail(&p, "no rules file given");
    FILE *f = fopen(path, "rb");
    if (NULL == f) return fail(&p, "cannot open the rules file (%s)", strerror(errno));
    char *buf = malloc((size_t)BRAID_RULES_MAX_FILE + 1);
    if (NULL == buf) {
        fclose(f);
        return fail(&p, "out of memory");
    }
    errno = 0;
    size_t len = fread(buf, 1, (size_t)BRAID_RULES_MAX_FILE + 1, f);
    int read_err = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    int rc;
    if (read_err) rc = fail(&p, "cannot read the rules file (%s)", strerror(read_err));
    else if (len > (size_t)BRAID_RULES_MAX_FILE)
        rc = fail(&p, "rules file too large (more than %d bytes)", BRAID_RULES_MAX_FILE);
    else rc = braid_rules_parse_buffer(buf, len, path, out, err, errlen);
    free(buf);
    return rc;
}

void braid_table_free(braid_table_t *t)
{
    if (NULL == t) return;
    free(t->rules);
    free(t->source);
    memset(t, 0, sizeof *t);
}

braid_table_t *braid_rules_load(const char *path, char *err, size_t errlen)
{
    braid_table_t *t = calloc(1, sizeof(*t));
    if (NULL == t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (0 == braid_rules_parse_file(path, t, err, errlen)) return t;
    braid_table_destroy(t);
    return NULL;
}

void braid_table_destroy(braid_table_t *t)
{
    if (NULL == t) return;
    braid_table_free(t);
    free(t);
}
