/*
 * coll_braid_component.c - component registration: MCA parameters, open,
 * close, init_query.
 */
#include "coll_braid.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "opal/util/output.h"
#include "opal/mca/base/mca_base_var.h"
#include "ompi/mca/rte/rte.h"

static int braid_register(void);
static int braid_open(void);
static int braid_close(void);

mca_coll_braid_component_t mca_coll_braid_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "braid",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = braid_open,
            .mca_close_component = braid_close,
            .mca_register_component_params = braid_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_braid_init_query,
        .collm_comm_query = mca_coll_braid_comm_query,
    },
    .priority = 40,
    .verbose = 0,
    .output = -1,
    .params_valid = true,
};

/* ------------------------------------------------------------------ */
/* Algorithm names: the valid values of coll_braid_<coll>_algorithm     */
/* ------------------------------------------------------------------ */

typedef struct braid_alg_param {
    const char *collective;
    const char *mpi_name;
    const char *const *names;   /* index = algorithm id, NULL-terminated */
    char *value;                /* the string given by the user */
    int *target;                /* where the id goes */
} braid_alg_param_t;

static const char *const barrier_names[] = { "auto", "all_to_all", "all_to_one",
                                             "dissemination", NULL };
static const char *const bcast_names[] = { "auto", "one_to_all", "binomial",
                                           "scatter_allgather", NULL };

static braid_alg_param_t alg_params[] = {
    { "barrier", "MPI_Barrier", barrier_names, NULL, &mca_coll_braid_component.barrier_algorithm },
    { "bcast", "MPI_Bcast", bcast_names, NULL, &mca_coll_braid_component.bcast_algorithm },
};
#define N_ALG_PARAMS (sizeof(alg_params) / sizeof(alg_params[0]))

const char *mca_coll_braid_algorithm_name(const char *collective, int alg)
{
    for (size_t i = 0; i < N_ALG_PARAMS; i++) {
        if (0 != strcmp(alg_params[i].collective, collective)) continue;
        for (int k = 0; alg_params[i].names[k]; k++)
            if (k == alg) return alg_params[i].names[k];
    }
    return "?";
}

static void join_names(const char *const *names, char *out, size_t len)
{
    out[0] = '\0';
    for (int k = 0; names[k]; k++) {
        if (k) strncat(out, " | ", len - strlen(out) - 1);
        strncat(out, names[k], len - strlen(out) - 1);
    }
}

/* Parse every algorithm parameter; on an unknown name, remember the message. */
static char invalid_message[1024];

static void parse_alg_params(void)
{
    for (size_t i = 0; i < N_ALG_PARAMS; i++) {
        braid_alg_param_t *p = &alg_params[i];
        *p->target = BRAID_AUTO;
        if (NULL == p->value || '\0' == p->value[0]) continue;
        int found = -1;
        for (int k = 0; p->names[k]; k++)
            if (0 == strcmp(p->names[k], p->value)) found = k;
        if (found >= 0) {
            *p->target = found;
            continue;
        }
        char valid[256];
        join_names(p->names, valid, sizeof(valid));
        snprintf(invalid_message, sizeof(invalid_message),
                 "braid: invalid value '%s' for MCA parameter coll_braid_%s_algorithm; "
                 "valid values: %s", p->value, p->collective, valid);
        mca_coll_braid_component.params_valid = false;
        return;
    }
}

static int braid_register(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    const mca_base_component_t *v = &c->super.collm_version;

    c->priority = 40;
    (void)mca_base_component_var_register(v, "priority",
        "Priority of the braid coll component (tuned is 30; braid takes over when higher)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &c->priority);
    c->verbose = 0;
    (void)mca_base_component_var_register(v, "verbose",
        "Verbosity: 1 errors and warnings, 10 the selection table, 20 one line per collective call (rank 0)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->verbose);

    for (size_t i = 0; i < N_ALG_PARAMS; i++) {
        braid_alg_param_t *p = &alg_params[i];
        char name[64], desc[512], valid[256];
        join_names(p->names, valid, sizeof(valid));
        snprintf(name, sizeof(name), "%s_algorithm", p->collective);
        snprintf(desc, sizeof(desc), "Algorithm for %s (auto = braid's selection table). Valid values: %s",
                 p->mpi_name, valid);
        p->value = (char *)"auto";
        (void)mca_base_component_var_register(v, name, desc, MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                              0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL,
                                              &p->value);
    }
    parse_alg_params();
    return OMPI_SUCCESS;
}

static int braid_open(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    c->disabled = false;
    c->transport_ready = false;
    return OMPI_SUCCESS;
}

static int braid_close(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    braid_ucx_finalize();
    c->transport_ready = false;
    if (c->output >= 0) opal_output_close(c->output);
    c->output = -1;
    return OMPI_SUCCESS;
}

int mca_coll_braid_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    if (!mca_coll_braid_component.params_valid) {
        /* an invalid value must not silently run something else: stop MPI_Init */
        if (0 == OMPI_PROC_MY_NAME->vpid) fprintf(stderr, "%s\n", invalid_message);
        ompi_rte_abort(1, NULL);
        return OMPI_ERR_BAD_PARAM;
    }
    return OMPI_SUCCESS;
}

void mca_coll_braid_log(int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    opal_output_verbose(level, mca_coll_braid_component.output, "braid: %s", buf);
}

int mca_coll_braid_to_mpi_error(int braid_rc)
{
    switch (braid_rc) {
    case BRAID_OK: return MPI_SUCCESS;
    case BRAID_ERR_NOMEM: return MPI_ERR_NO_MEM;
    case BRAID_ERR_ARG: return MPI_ERR_ARG;
    default: return MPI_ERR_INTERN;
    }
}
