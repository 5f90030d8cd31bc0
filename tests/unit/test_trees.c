/*
 * test_trees.c - structure of the double binary trees (P = 1..1024) and of
 * bcube's groups (P = 1..256, bases 2..8, default and auto).
 *
 * Trees: every tree spans all ranks once from its root, parent and child
 * links agree, at most 2 children (3 at the root of a re-rooted tree 1),
 * depth exactly ceil(lg P) (re-rooted tree 1: at most ceil(lg P) + 1, and
 * never above braid_dbtree_max_depth), NCCL's parent formula, the
 * mirror/shift relation of tree 1, for even P no rank interior in both
 * trees (odd P: only rank 0), and in-order subtrees where promised.
 * bcube: the factorisation multiplies to P with sizes <= base (or prime),
 * every step's groups partition the ranks, and after all steps each rank
 * has combined every rank's data exactly once, in contiguous rank order.
 */
#include "unit_common.h"
#include "braid_trees.h"

#include <string.h>

#define MAX_TREE_P 1024
#define MAX_BCUBE_P 256

/* P in blocks of P_BLOCK per test: each test is a fork, which under ASan
 * (with its leak check at the child's exit) costs ~90 ms - one per P
 * would take minutes. A failure's loop index i is the block of
 * P = 32 i + 1 .. 32 i + 32 */
#define P_BLOCK 32
static int block_first(int i) { return i * P_BLOCK + 1; }
static int block_last(int i, int max) { return (i + 1) * P_BLOCK < max ? (i + 1) * P_BLOCK : max; }

typedef struct tree_check {
    int P;
    braid_tree_node_t node[MAX_TREE_P];
    int depth[MAX_TREE_P];
    int lo[MAX_TREE_P], hi[MAX_TREE_P], size[MAX_TREE_P];  /* subtree ranges */
    int order[MAX_TREE_P];                                  /* BFS order */
} tree_check_t;

static tree_check_t tc;

static int ceil_lg(int P) { int d = 0; while ((1 << d) < P) d++; return d; }

/* Check links, spanning, depth; fill tc. Returns the maximum depth. */
static int check_tree(const braid_dbtree_t *t, int which, int max_children)
{
    int P = t->P, bad_links = 0, nroots = 0, too_many = 0;
    int root = braid_dbtree_get_root(t, which);
    ck_assert_int_ge(root, 0);
    ck_assert_int_lt(root, P);
    for (int r = 0; r < P; r++) braid_dbtree_get(t, which, r, &tc.node[r]);
    for (int r = 0; r < P; r++) {
        const braid_tree_node_t *n = &tc.node[r];
        if (n->parent < 0) nroots++;
        if (n->nchildren > max_children) too_many++;
        if (n->parent >= P || n->parent == r) bad_links++;
        if (n->parent >= 0 && n->parent < P) {
            const braid_tree_node_t *p = &tc.node[n->parent];
            int found = 0;
            for (int i = 0; i < p->nchildren; i++) found += p->child[i] == r;
            if (1 != found) bad_links++;
        }
        for (int i = 0; i < n->nchildren; i++) {
            int ch = n->child[i];
            if (ch < 0 || ch >= P || tc.node[ch].parent != r) bad_links++;
        }
        for (int i = n->nchildren; i < BRAID_TREE_MAX_CHILDREN; i++)
            if (-1 != n->child[i]) bad_links++;
    }
    ck_assert_msg(0 == bad_links, "P=%d tree %d root %d: %d bad links", P, which, t->root, bad_links);
    ck_assert_msg(1 == nroots && tc.node[root].parent < 0, "P=%d tree %d: %d roots", P, which, nroots);
    ck_assert_msg(0 == too_many, "P=%d tree %d: %d ranks with > %d children", P, which, too_many,
                  max_children);
    /* breadth first from the root: every rank exactly once */
    for (int r = 0; r < P; r++) tc.depth[r] = -1;
    int head = 0, tail = 0, revisits = 0, maxd = 0;
    tc.order[tail++] = root;
    tc.depth[root] = 0;
    while (head < tail) {
        int r = tc.order[head++];
        for (int i = 0; i < tc.node[r].nchildren; i++) {
            int ch = tc.node[r].child[i];
            if (tc.depth[ch] >= 0) { revisits++; continue; }
            tc.depth[ch] = tc.depth[r] + 1;
            if (tc.depth[ch] > maxd) maxd = tc.depth[ch];
            tc.order[tail++] = ch;
        }
    }
    ck_assert_msg(tail == P && 0 == revisits, "P=%d tree %d: spans %d ranks, %d revisits", P,
                  which, tail, revisits);
    int bad_depth = 0;
    for (int r = 0; r < P; r++)
        if (braid_dbtree_get_depth(t, which, r) != tc.depth[r]) bad_depth++;
    ck_assert_msg(0 == bad_depth, "P=%d tree %d: %d wrong depths", P, which, bad_depth);
    ck_assert_int_le(maxd, braid_dbtree_max_depth(t, which));
    return maxd;
}

/* every subtree a contiguous range, lower children below, upper above */
static void check_inorder(int P, int which)
{
    int bad = 0;
    for (int k = P - 1; k >= 0; k--) {           /* reverse BFS: children first */
        int r = tc.order[k];
        const braid_tree_node_t *n = &tc.node[r];
        tc.lo[r] = tc.hi[r] = r;
        tc.size[r] = 1;
        int prev_hi = -1, lower = 0, upper = 0;
        for (int i = 0; i < n->nchildren; i++) {
            int ch = n->child[i];
            if (tc.lo[ch] < tc.lo[r]) tc.lo[r] = tc.lo[ch];
            if (tc.hi[ch] > tc.hi[r]) tc.hi[r] = tc.hi[ch];
            tc.size[r] += tc.size[ch];
            if (tc.lo[ch] <= prev_hi) bad++;     /* children listed in rank order */
            prev_hi = tc.hi[ch];
            if (tc.hi[ch] < r) lower++;
            else if (tc.lo[ch] > r) upper++;
            else bad++;                          /* r inside a child's range */
        }
        /* fold (lower child, r, upper child) needs one of each at most */
        if (lower > 1 || upper > 1) bad++;
        if (tc.hi[r] - tc.lo[r] + 1 != tc.size[r]) bad++;
    }
    ck_assert_msg(0 == bad, "P=%d tree %d: %d subtrees not in order", P, which, bad);
}

static bool interior(const braid_tree_node_t *n) { return n->nchildren > 0; }

static void check_one_dbtree_nccl(int P)
{
    braid_dbtree_t t = { P, BRAID_DBTREE_NCCL, -1 };
    static braid_tree_node_t t0[MAX_TREE_P];
    /* tree 0: NCCL's btree, in-order, exact depth */
    int d0 = check_tree(&t, 0, 2);
    ck_assert_int_eq(d0, ceil_lg(P));
    ck_assert_int_eq(braid_dbtree_get_root(&t, 0), 0);
    ck_assert_int_eq(braid_dbtree_root(P, 0), 0);
    check_inorder(P, 0);
    memcpy(t0, tc.node, sizeof(braid_tree_node_t) * (size_t)P);
    int bad_formula = 0;
    for (int r = 1; r < P; r++) {
        int bit = r & -r, up = (r ^ bit) | (bit << 1);
        if (t0[r].parent != (up < P ? up : (r ^ bit))) bad_formula++;
    }
    ck_assert_msg(0 == bad_formula, "P=%d: %d parents differ from NCCL's formula", P, bad_formula);
    /* tree 1: mirror (even P) or shift (odd P) of tree 0 */
    int d1 = check_tree(&t, 1, 2);
    ck_assert_int_eq(d1, ceil_lg(P));
    int root1 = P % 2 == 0 ? P - 1 : (P > 1 ? 1 : 0);
    ck_assert_int_eq(braid_dbtree_get_root(&t, 1), root1);
    ck_assert_int_eq(braid_dbtree_root(P, 1), root1);
    if (P % 2 == 0) check_inorder(P, 1);
    int bad_map = 0, both = 0, neither = 0;
    for (int r = 0; r < P; r++) {
        braid_tree_node_t n1;
        braid_dbtree_node(P, r, 1, &n1);
        if (n1.parent != tc.node[r].parent) bad_map++;
        int src = P % 2 == 0 ? P - 1 - r : (r - 1 + P) % P;
        int p0 = t0[src].parent;
        int expect = p0 < 0 ? -1 : (P % 2 == 0 ? P - 1 - p0 : (p0 + 1) % P);
        if (n1.parent != expect || n1.nchildren != t0[src].nchildren) bad_map++;
        if (interior(&t0[r]) && interior(&n1) && !(P % 2 == 1 && 0 == r)) both++;
        if (!interior(&t0[r]) && !interior(&n1)) neither++;
    }
    ck_assert_msg(0 == bad_map, "P=%d: tree 1 is not the mirror/shift of tree 0 (%d)", P, bad_map);
    ck_assert_msg(0 == both, "P=%d: %d ranks interior in both trees", P, both);
    ck_assert_msg(0 == neither || P == 1, "P=%d: %d ranks leaves in both trees", P, neither);
    if (P % 2 == 1 && P > 1) {
        braid_tree_node_t n1;
        braid_dbtree_node(P, 0, 1, &n1);
        ck_assert(interior(&t0[0]) && interior(&n1) && 1 == t0[0].nchildren);
    }
}

START_TEST(test_dbtree_nccl)
{
    for (int P = block_first(_i); P <= block_last(_i, MAX_TREE_P); P++) check_one_dbtree_nccl(P);
}
END_TEST

static void check_one_dbtree_inorder(int P)
{
    braid_dbtree_t t = { P, BRAID_DBTREE_INORDER, -1 };
    static braid_tree_node_t t0[MAX_TREE_P];
    ck_assert_int_eq(check_tree(&t, 0, 2), ceil_lg(P));
    memcpy(t0, tc.node, sizeof(braid_tree_node_t) * (size_t)P);
    int d1 = check_tree(&t, 1, 2);
    ck_assert_int_le(d1, ceil_lg(P));
    check_inorder(P, 1);
    int both = 0, neither = 0;
    for (int r = 0; r < P; r++) {
        if (interior(&t0[r]) && interior(&tc.node[r])) both++;
        if (!interior(&t0[r]) && !interior(&tc.node[r])) neither++;
    }
    ck_assert_msg(0 == both, "P=%d: %d ranks interior in both in-order trees", P, both);
    ck_assert_msg(0 == neither || P == 1, "P=%d: %d ranks leaves in both in-order trees", P, neither);
    if (P % 2 == 0) {  /* the same trees as NCCL's */
        int diff = 0;
        for (int r = 0; r < P; r++) {
            braid_tree_node_t n;
            braid_dbtree_node(P, r, 1, &n);
            if (n.parent != tc.node[r].parent) diff++;
        }
        ck_assert_int_eq(diff, 0);
    }
}

START_TEST(test_dbtree_inorder)
{
    for (int P = block_first(_i); P <= block_last(_i, MAX_TREE_P); P++) check_one_dbtree_inorder(P);
}
END_TEST

/* re-rooted at every root for P <= 64, three roots above */
static void check_one_dbtree_rooted(int P)
{
    int roots[3] = { 0, P / 2, P - 1 };
    int nroots = P <= 64 ? P : 3;
    for (int k = 0; k < nroots; k++) {
        int root = P <= 64 ? k : roots[k];
        braid_dbtree_t t = { P, BRAID_DBTREE_NCCL, root };
        ck_assert_int_eq(braid_dbtree_get_root(&t, 0), root);
        ck_assert_int_eq(braid_dbtree_get_root(&t, 1), root);
        ck_assert_int_eq(check_tree(&t, 0, 2), ceil_lg(P));
        int d1 = check_tree(&t, 1, BRAID_TREE_MAX_CHILDREN);
        ck_assert_int_le(d1, ceil_lg(P) + 1);
        int three = 0;
        for (int r = 0; r < P; r++)
            if (tc.node[r].nchildren > 2 && r != root) three++;
        ck_assert_int_eq(three, 0);
        /* tree 0 is the btree relabelled v = (r - root) mod P */
        int bad = 0;
        for (int r = 0; r < P; r++) {
            braid_tree_node_t n, b;
            braid_dbtree_get(&t, 0, r, &n);
            braid_btree_node(P, (r - root + P) % P, &b);
            if (n.parent != (b.parent < 0 ? -1 : (b.parent + root) % P)) bad++;
        }
        ck_assert_int_eq(bad, 0);
    }
}

START_TEST(test_dbtree_rooted)
{
    for (int P = block_first(_i); P <= block_last(_i, MAX_TREE_P); P++) check_one_dbtree_rooted(P);
}
END_TEST

/* ---------------- bcube ---------------- */

static bool is_prime(int x)
{
    if (x < 2) return false;
    for (int d = 2; d * d <= x; d++)
        if (0 == x % d) return false;
    return true;
}

static void check_bcube(int P, int base)
{
    int g[BRAID_BCUBE_MAX_STEPS];
    int m = braid_bcube_factor(P, base, g);
    ck_assert_int_ge(m, 0);
    ck_assert_int_le(m, BRAID_BCUBE_MAX_STEPS);
    long prod = 1;
    int bad_size = 0;
    for (int s = 0; s < m; s++) {
        prod *= g[s];
        if (g[s] < 2) bad_size++;
        if (base >= 2 && g[s] > base && !is_prime(g[s])) bad_size++;
        if (base < 0 && m > 2) bad_size++;
    }
    ck_assert_msg(prod == P && 0 == bad_size, "P=%d base %d: bad factorisation (m=%d)", P, base, m);
    if (P == 1) { ck_assert_int_eq(m, 0); return; }
    if (base >= 2) {   /* P = base^k gives k groups of base */
        int k = 0;
        long q = 1;
        while (q < P) { q *= base; k++; }
        if (q == P) {
            ck_assert_int_eq(m, k);
            for (int s = 0; s < m; s++) ck_assert_int_eq(g[s], base);
        }
    }
    /* groups partition the ranks at every step */
    int bad = 0;
    for (int s = 0; s < m; s++)
        for (int r = 0; r < P; r++) {
            int d = braid_bcube_digit(g, s, r);
            if (d < 0 || d >= g[s] || braid_bcube_member(g, s, r, d) != r) bad++;
            for (int j = 0; j < g[s]; j++) {
                int x = braid_bcube_member(g, s, r, j);
                if (x < 0 || x >= P || braid_bcube_digit(g, s, x) != j) { bad++; continue; }
                /* x's group is r's group: same first member (the groups
                 * are then equal, member j being the one with digit j) */
                if (braid_bcube_member(g, s, x, 0) != braid_bcube_member(g, s, r, 0)) bad++;
            }
        }
    ck_assert_msg(0 == bad, "P=%d base %d: %d group inconsistencies", P, base, bad);
    /* Fold the groups in digit order, step after step, tracking the range
     * of ranks in each rank's partial result: members' ranges must be
     * consecutive (so each rank's data enters once, in rank order), and in
     * the end every range is 0..P-1. */
    int *lo = malloc(sizeof(int) * (size_t)P), *hi = malloc(sizeof(int) * (size_t)P);
    int *nlo = malloc(sizeof(int) * (size_t)P), *nhi = malloc(sizeof(int) * (size_t)P);
    for (int r = 0; r < P; r++) lo[r] = hi[r] = r;
    int bad_order = 0;
    for (int s = 0; s < m; s++) {
        for (int y = 0; y < P; y++) {
            for (int j = 1; j < g[s]; j++)
                if (lo[braid_bcube_member(g, s, y, j)] != hi[braid_bcube_member(g, s, y, j - 1)] + 1)
                    bad_order++;
            nlo[y] = lo[braid_bcube_member(g, s, y, 0)];
            nhi[y] = hi[braid_bcube_member(g, s, y, g[s] - 1)];
        }
        memcpy(lo, nlo, sizeof(int) * (size_t)P);
        memcpy(hi, nhi, sizeof(int) * (size_t)P);
    }
    int wrong = 0;
    for (int y = 0; y < P; y++) wrong += lo[y] != 0 || hi[y] != P - 1;
    ck_assert_msg(0 == wrong && 0 == bad_order,
                  "P=%d base %d: %d ranks miss data, %d folds out of order", P, base, wrong, bad_order);
    free(lo); free(hi); free(nlo); free(nhi);
    if (P > 64) return;
    /* independently for small P: reach[y][x] counts how often rank x's data
     * is in rank y's result (sum over the group each step); all ones */
    unsigned short *reach = calloc((size_t)P * (size_t)P, sizeof(*reach));
    unsigned short *next = calloc((size_t)P * (size_t)P, sizeof(*next));
    for (int r = 0; r < P; r++) reach[(size_t)r * P + r] = 1;
    for (int s = 0; s < m; s++) {
        memset(next, 0, sizeof(*next) * (size_t)P * (size_t)P);
        for (int y = 0; y < P; y++)
            for (int j = 0; j < g[s]; j++) {
                const unsigned short *src = reach + (size_t)braid_bcube_member(g, s, y, j) * P;
                for (int z = 0; z < P; z++) next[(size_t)y * P + z] += src[z];
            }
        unsigned short *tmp = reach; reach = next; next = tmp;
    }
    wrong = 0;
    for (size_t i = 0; i < (size_t)P * (size_t)P; i++) wrong += reach[i] != 1;
    ck_assert_msg(0 == wrong, "P=%d base %d: %d rank pairs not combined exactly once", P, base, wrong);
    free(reach); free(next);
}

static void check_one_bcube_groups(int P)
{
    for (int base = 2; base <= 8; base++) check_bcube(P, base);
    check_bcube(P, 0);
    check_bcube(P, BRAID_BCUBE_AUTO);
}

START_TEST(test_bcube_groups)
{
    for (int P = block_first(_i); P <= block_last(_i, MAX_BCUBE_P); P++) check_one_bcube_groups(P);
}
END_TEST

START_TEST(test_bcube_factor_examples)
{
    int g[BRAID_BCUBE_MAX_STEPS];
    ck_assert_int_eq(braid_bcube_factor(64, 4, g), 3);
    ck_assert_int_eq(braid_bcube_factor(12, 4, g), 2);
    ck_assert(g[0] == 4 && g[1] == 3);
    ck_assert_int_eq(braid_bcube_factor(13, 4, g), 1);
    ck_assert_int_eq(g[0], 13);
    ck_assert_int_eq(braid_bcube_factor(64, 0, g), 3);   /* default base 4 */
    ck_assert_int_eq(braid_bcube_factor(64, BRAID_BCUBE_AUTO, g), 2);
    ck_assert(g[0] == 8 && g[1] == 8);
    ck_assert_int_eq(braid_bcube_factor(24, BRAID_BCUBE_AUTO, g), 2);
    ck_assert(g[0] == 6 && g[1] == 4);
    ck_assert_int_eq(braid_bcube_factor(1, 4, g), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trees");
    TCase *t = tcase_create("dbtree");
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, test_dbtree_nccl, 0, MAX_TREE_P / P_BLOCK);
    tcase_add_loop_test(t, test_dbtree_inorder, 0, MAX_TREE_P / P_BLOCK);
    tcase_add_loop_test(t, test_dbtree_rooted, 0, MAX_TREE_P / P_BLOCK);
    suite_add_tcase(s, t);
    TCase *b = tcase_create("bcube");
    tcase_set_timeout(b, 120);
    tcase_add_loop_test(b, test_bcube_groups, 0, MAX_BCUBE_P / P_BLOCK);
    tcase_add_test(b, test_bcube_factor_examples);
    suite_add_tcase(s, b);
    return unit_run_suite(s);
}
