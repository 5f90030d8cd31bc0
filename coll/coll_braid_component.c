/*
 * coll_braid_component.c - the component: open, close, init_query (the
 * parameters are registered in coll_braid_params.c), the rules file, the
 * dispatch's view of the parameters.
 */
#include "coll_braid_component.h"
#include "coll_braid_compat.h"
#include "coll_braid_op.h"
#include "coll_braid_request.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"

static int braid_open(void);
static int braid_close(void);

mca_coll_braid_component_t mca_coll_braid_component = {
    .super = {
        .collm_version = {
            BRAID_COLL_BASE_VERSION,
            .mca_component_name = "braid",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = braid_open,
            .mca_close_component = braid_close,
            .mca_register_component_params = mca_coll_braid_register,
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

static void say_line(void *arg, const char *text)
{
    (void)arg;
    opal_output(0, "braid: %s", text);
}

/* Load the rules file named by coll_braid_rules_file. A broken file is
 * reported (file, line, token) and ignored: the built-in table serves. */
static void load_rules(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    bool speaker = 0 == OMPI_PROC_MY_NAME->vpid;
    char err[512];
    c->rules = NULL;
    if (NULL != c->rules_file && '\0' != c->rules_file[0] &&
        NULL == (c->rules = braid_rules_load(c->rules_file, err, sizeof(err))) && speaker)
        opal_output(0, "braid: WARNING: ignoring rules file (coll_braid_rules_file): %s; using "
                    "the built-in selection table", err);
    if (speaker && c->verbose >= 10)
        braid_select_describe(c->forced_algorithm, c->rules, c->rules_file, say_line, NULL);
}

static int braid_open(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    c->disabled = false;
    c->transport_ready = false;
    if (c->params_valid) {
        load_rules();
        mca_coll_braid_transport_open();
    }
    return OMPI_SUCCESS;
}

static int braid_close(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    if (c->progress_registered) {
        opal_progress_unregister(mca_coll_braid_progress);
        c->progress_registered = false;
    }
    mca_coll_braid_requests_fini();
    mca_coll_braid_op_fini();
    braid_ucx_finalize();
    c->transport_ready = false;
    free(c->node_key);
    c->node_key = NULL;
    free(c->proc_of_vpid);
    c->proc_of_vpid = NULL;
    braid_tag_numbers_release(&c->group_ids);
    braid_table_destroy(c->rules);
    c->rules = NULL;
    if (c->output >= 0) opal_output_close(c->output);
    c->output = -1;
    return OMPI_SUCCESS;
}

int mca_coll_braid_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    (void)enable_progress_threads;
    c->thread_multiple = enable_mpi_threads;
    /* the progress thread resumes requests, and so runs user ops and
     * completes Open MPI requests: only where MPI lets any thread do that */
    if (c->progress_thread && !enable_mpi_threads) {
        c->progress_thread = 0;
        if (c->params_valid && 0 == OMPI_PROC_MY_NAME->vpid)
            fprintf(stderr, "braid: coll_braid_progress_thread=1 needs MPI_THREAD_MULTIPLE (this "
                    "job initialised MPI at a lower thread level): the progress thread stays "
                    "off, and nonblocking collectives progress inside MPI calls\n");
    }
    if (!c->params_valid) {
        /* an invalid value must not silently run something else: stop MPI_Init */
        if (0 == OMPI_PROC_MY_NAME->vpid) fprintf(stderr, "%s\n", mca_coll_braid_invalid_message);
        ompi_rte_abort(1, NULL);
        return OMPI_ERR_BAD_PARAM;
    }
    return OMPI_SUCCESS;
}

braid_site_conf_t mca_coll_braid_site_conf;

void mca_coll_braid_conf_refresh(void)
{
    const mca_coll_braid_component_t *c = &mca_coll_braid_component;
    braid_site_conf_t *f = &mca_coll_braid_site_conf;
    for (int i = 0; i < BRAID_COLL_N; i++) f->forced[i] = c->forced_algorithm[i];
    f->rules = c->rules;
    f->chunk_bytes = (size_t)c->chunk_size;
    f->tree_chunk_bytes = (size_t)c->dbtree_chunk_size;
    f->bcube_base = c->bcube_base;
    f->seg_bytes = c->cuda_job && c->cuda_segment_size > 0 ? (size_t)c->cuda_segment_size : 0;
    f->trace = c->verbose >= 20;
    f->shared = c->thread_multiple || c->progress_thread;
    /* 0 in the parameter: every call (a call of 0 bytes has nothing to overlap) */
    f->progress_thread_bytes = !c->progress_thread            ? 0
                               : c->progress_thread_bytes > 0 ? (size_t)c->progress_thread_bytes
                                                              : 1;
}
