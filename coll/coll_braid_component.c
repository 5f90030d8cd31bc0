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

/* Parse every coll_braid_<collective>_algorithm; on an unknown name,
 * remember the message (MPI_Init is stopped in init_query). */
static char invalid_message[1024];

static void parse_alg_params(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    for (int coll = 0; coll < BRAID_COLL_N; coll++) {
        const char *value = c->algorithm_param[coll];
        c->forced_algorithm[coll] = BRAID_ALG_AUTO;
        if (NULL == value || '\0' == value[0]) continue;
        int id = braid_alg_lookup((braid_coll_t)coll, value);
        if (id >= 0) {
            c->forced_algorithm[coll] = id;
            continue;
        }
        char valid[256];
        braid_alg_names_joined((braid_coll_t)coll, valid, sizeof(valid));
        snprintf(invalid_message, sizeof(invalid_message),
                 "braid: invalid value '%s' for MCA parameter coll_braid_%s_algorithm; "
                 "valid values: %s", value, braid_coll_name((braid_coll_t)coll), valid);
        c->params_valid = false;
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

    for (int coll = 0; coll < BRAID_COLL_N; coll++) {
        char name[64], desc[512], valid[256];
        braid_alg_names_joined((braid_coll_t)coll, valid, sizeof(valid));
        snprintf(name, sizeof(name), "%s_algorithm", braid_coll_name((braid_coll_t)coll));
        snprintf(desc, sizeof(desc),
                 "Algorithm for %s (auto = braid's selection table). Valid values: %s",
                 braid_coll_mpi_name((braid_coll_t)coll), valid);
        c->algorithm_param[coll] = (char *)"auto";
        (void)mca_base_component_var_register(v, name, desc, MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                              0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL,
                                              &c->algorithm_param[coll]);
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
