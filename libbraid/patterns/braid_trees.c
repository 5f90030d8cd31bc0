/*
 * braid_trees.c - NCCL's double binary tree and bcube's group factorisation;
 * see braid_trees.h.
 *
 * The btree (tree 0): a rank r > 0 with lowest set bit b is the root of the
 * ranks r-b+1 .. min(r+b-1, P-1) (clipped to P); its lower child is r - b/2
 * and its upper child r + l, with l the largest of b/2, b/4, ... for which
 * r + l < P. Rank 0 sits above 2^floor(lg(P-1)), the root of 1 .. P-1. Every
 * child has a smaller lowest set bit than its parent, which bounds the depth
 * by ceil(lg P); rank 1 (the chain of lower children from the top) reaches it.
 */
#include "braid_trees.h"

#include <stddef.h>

static void node_clear(braid_tree_node_t *out)
{
    out->parent = -1;
    out->nchildren = 0;
    for (int i = 0; i < BRAID_TREE_MAX_CHILDREN; i++) out->child[i] = -1;
}

static void node_add_child(braid_tree_node_t *out, int child)
{
    out->child[out->nchildren++] = child;
}

void braid_btree_node(int P, int rank, braid_tree_node_t *out)
{
    node_clear(out);
    if (P <= 1) return;
    if (0 == rank) {
        int top = 1;
        while (top * 2 < P) top *= 2;   /* largest power of two below P */
        node_add_child(out, top);
        return;
    }
    int bit = rank & -rank;
    int up = (rank ^ bit) | (bit << 1);
    out->parent = up < P ? up : (rank ^ bit);
    int low = bit >> 1;
    if (0 == low) return;               /* odd ranks are leaves */
    node_add_child(out, rank - low);    /* always < rank < P */
    while (low > 0 && rank + low >= P) low >>= 1;
    if (low > 0) node_add_child(out, rank + low);
}

/* ---- the base double tree (own roots) ---- */

/*
 * Tree 1 is the btree over Pb ranks seen through a relabelling:
 *  - mirror (NCCL, even P; and BRAID_DBTREE_INORDER, even P): Pb = P,
 *    rank r is btree label P-1-r;
 *  - shift (NCCL, odd P): Pb = P, rank r is label (r-1) mod P;
 *  - mirror with a phantom (BRAID_DBTREE_INORDER, odd P): Pb = P+1, rank r is
 *    label P-r; label 0 (rank P) does not exist, so its single child becomes
 *    the root. This keeps the tree in-order and makes the odd ranks its
 *    interior nodes, the complement of tree 0's even ones.
 */
typedef struct relabel {
    int P, Pb;
    bool mirror;
} relabel_t;

static relabel_t relabel_of(int P, braid_dbtree_kind_t kind)
{
    relabel_t m = { P, P, true };
    if (1 == P % 2) {
        if (BRAID_DBTREE_INORDER == kind) m.Pb = P + 1;
        else m.mirror = false;
    }
    return m;
}

static int map_to_btree(const relabel_t *m, int r)
{
    return m->mirror ? m->Pb - 1 - r : (r - 1 + m->P) % m->P;
}

static int map_from_btree(const relabel_t *m, int v)
{
    if (v < 0) return -1;
    if (!m->mirror) return (v + 1) % m->P;
    int r = m->Pb - 1 - v;
    return r < m->P ? r : -1;      /* the phantom root */
}

static void base_node(int P, braid_dbtree_kind_t kind, int which, int rank,
                      braid_tree_node_t *out)
{
    if (0 == which || P <= 1) {
        braid_btree_node(P, rank, out);
        return;
    }
    relabel_t m = relabel_of(P, kind);
    braid_tree_node_t b;
    braid_btree_node(m.Pb, map_to_btree(&m, rank), &b);
    node_clear(out);
    out->parent = map_from_btree(&m, b.parent);
    /* keep children in increasing rank order (the mirror reverses them) */
    for (int i = 0; i < b.nchildren; i++) {
        int ci = m.mirror ? b.nchildren - 1 - i : i;
        node_add_child(out, map_from_btree(&m, b.child[ci]));
    }
}

static int base_root(int P, braid_dbtree_kind_t kind, int which)
{
    if (0 == which || P <= 1) return 0;
    relabel_t m = relabel_of(P, kind);
    if (m.Pb == P) return map_from_btree(&m, 0);
    braid_tree_node_t b;
    braid_btree_node(m.Pb, 0, &b);
    return map_from_btree(&m, b.child[0]);
}

void braid_dbtree_node(int P, int rank, int which, braid_tree_node_t *out)
{
    base_node(P, BRAID_DBTREE_NCCL, which, rank, out);
}

int braid_dbtree_root(int P, int which)
{
    return base_root(P, BRAID_DBTREE_NCCL, which);
}

/* ---- rooted at an arbitrary rank ---- */

static int rel(const braid_dbtree_t *t, int r) { return (r - t->root + t->P) % t->P; }
static int absr(const braid_dbtree_t *t, int v) { return v < 0 ? -1 : (v + t->root) % t->P; }

static void rooted_node(const braid_dbtree_t *t, int which, int rank, braid_tree_node_t *out)
{
    int P = t->P;
    int v = rel(t, rank);
    braid_tree_node_t b;
    base_node(P, t->kind, which, v, &b);
    if (1 == which && P > 1) {
        /* re-root tree 1 at label 0: cut 0 from its parent, hang the old
         * root r1 under 0 */
        int r1 = base_root(P, t->kind, 1);
        if (0 == v) {
            b.parent = -1;
            node_add_child(&b, r1);
        } else {
            if (v == r1) b.parent = 0;
            int k = 0;
            for (int i = 0; i < b.nchildren; i++)
                if (0 != b.child[i]) b.child[k++] = b.child[i];
            for (int i = k; i < b.nchildren; i++) b.child[i] = -1;
            b.nchildren = k;
        }
    }
    node_clear(out);
    out->parent = absr(t, b.parent);
    for (int i = 0; i < b.nchildren; i++) node_add_child(out, absr(t, b.child[i]));
}

void braid_dbtree_get(const braid_dbtree_t *t, int which, int rank, braid_tree_node_t *out)
{
    if (t->root < 0) base_node(t->P, t->kind, which, rank, out);
    else rooted_node(t, which, rank, out);
}

int braid_dbtree_get_root(const braid_dbtree_t *t, int which)
{
    return t->root < 0 ? base_root(t->P, t->kind, which) : t->root;
}

int braid_dbtree_get_depth(const braid_dbtree_t *t, int which, int rank)
{
    int d = 0;
    braid_tree_node_t n;
    braid_dbtree_get(t, which, rank, &n);
    while (n.parent >= 0 && d <= t->P) {
        d++;
        braid_dbtree_get(t, which, n.parent, &n);
    }
    return d;
}

int braid_dbtree_max_depth(const braid_dbtree_t *t, int which)
{
    int d = 0;
    while ((1 << d) < t->P) d++;
    return d + (t->root >= 0 && 1 == which && t->P > 1 ? 1 : 0);
}

/* ------------------------------------------------------------------ */
/* bcube                                                               */
/* ------------------------------------------------------------------ */

static void sort_desc(int *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] > v[j - 1]; j--) {
            int x = v[j]; v[j] = v[j - 1]; v[j - 1] = x;
        }
}

static int factor_auto(int P, int *g)
{
    int a = 1;
    for (int d = 2; (long)d * d <= P; d++)
        if (0 == P % d) a = d;
    if (1 == a) { g[0] = P; return 1; }
    g[0] = P / a;
    g[1] = a;
    return 2;
}

int braid_bcube_factor(int P, int base, int *g)
{
    if (P <= 1) return 0;
    if (0 == base) base = BRAID_BCUBE_DEFAULT_BASE;
    if (base < 0) return factor_auto(P, g);
    if (base < 2) base = 2;
    /* prime factors, largest first (at most 31 of them for an int) */
    int primes[BRAID_BCUBE_MAX_STEPS], np = 0, rest = P;
    for (int d = 2; (long)d * d <= rest; d++)
        while (0 == rest % d) { primes[np++] = d; rest /= d; }
    if (rest > 1) primes[np++] = rest;
    sort_desc(primes, np);
    int m = 0;
    for (int i = 0; i < np; i++) {
        int k = 0;
        while (k < m && (long)g[k] * primes[i] > base) k++;
        if (k == m) g[m++] = primes[i];
        else g[k] *= primes[i];
    }
    sort_desc(g, m);
    return m;
}

static int stride_of(const int *g, int step)
{
    int s = 1;
    for (int i = 0; i < step; i++) s *= g[i];
    return s;
}

int braid_bcube_digit(const int *g, int step, int rank)
{
    return rank / stride_of(g, step) % g[step];
}

int braid_bcube_member(const int *g, int step, int rank, int j)
{
    return rank + (j - braid_bcube_digit(g, step, rank)) * stride_of(g, step);
}
