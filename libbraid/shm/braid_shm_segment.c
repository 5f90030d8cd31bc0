/*
 * braid_shm_segment.c - POSIX shared memory for the shm tier (see the
 * header for the life cycle).
 */
#include "braid_shm_segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void set_err(char *err, size_t len, const char *what, const char *name, int e)
{
    if (err && len) snprintf(err, len, "%s %s: %s", what, name, strerror(e));
}

static int map_fd(braid_shm_segment_t *g, int fd, size_t bytes, char *err, size_t errlen)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (MAP_FAILED == p) {
        set_err(err, errlen, "mmap", g->name, e);
        return -1;
    }
    g->base = p;
    g->bytes = bytes;
    return 0;
}

/* Names of this user's segments whose creator no longer runs: a job killed
 * between a segment's creation and its unlink (the set-up of one
 * communicator, a few microseconds to a collective's time) left them.
 * Swept by the first segment a process creates, so a killed job's leftovers
 * go with the next job of the same user on the node. */
static void sweep_orphans(void)
{
    DIR *d = opendir("/dev/shm");
    if (NULL == d) return;
    char prefix[32];
    int n = snprintf(prefix, sizeof prefix, "braid-%u-", (unsigned)getuid());
    struct dirent *e;
    while (NULL != (e = readdir(d))) {
        if (0 != strncmp(e->d_name, prefix, (size_t)n)) continue;
        char *end;
        long pid = strtol(e->d_name + n, &end, 10);
        if (pid <= 0 || '-' != *end) continue;
        if (0 != kill((pid_t)pid, 0) && ESRCH == errno) {
            char name[sizeof e->d_name + 1];
            snprintf(name, sizeof name, "/%s", e->d_name);
            (void)shm_unlink(name);
        }
    }
    closedir(d);
}

int braid_shm_segment_create(braid_shm_segment_t *g, size_t bytes, char *err, size_t errlen)
{
    static atomic_uint counter;
    static atomic_flag swept = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&swept)) sweep_orphans();
    memset(g, 0, sizeof *g);
    int fd = -1;
    for (int tries = 0; tries < 16 && fd < 0; tries++) {
        snprintf(g->name, sizeof g->name, "/braid-%u-%ld-%u", (unsigned)getuid(), (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        fd = shm_open(g->name, O_RDWR | O_CREAT | O_EXCL, S_IRUSR | S_IWUSR);
        if (fd < 0 && EEXIST != errno) break;
    }
    if (fd < 0) {
        set_err(err, errlen, "shm_open", g->name, errno);
        return -1;
    }
    g->linked = true;
    /* the umask cannot widen 0600, but a umask-free fchmod states it */
    int rc = fchmod(fd, S_IRUSR | S_IWUSR);
    if (0 == rc) rc = ftruncate(fd, (off_t)bytes);
    if (0 == rc) rc = posix_fallocate(fd, 0, (off_t)bytes);   /* returns the error number */
    if (0 != rc) {
        int e = rc > 0 ? rc : errno;
        set_err(err, errlen, "sizing", g->name, e);
        close(fd);
        braid_shm_segment_unlink(g);
        return -1;
    }
    if (0 != map_fd(g, fd, bytes, err, errlen)) {
        braid_shm_segment_unlink(g);
        return -1;
    }
    return 0;
}

int braid_shm_segment_open(braid_shm_segment_t *g, const char *name, size_t bytes, char *err,
                           size_t errlen)
{
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    int fd = shm_open(g->name, O_RDWR, 0);
    if (fd < 0) {
        set_err(err, errlen, "shm_open", g->name, errno);
        return -1;
    }
    struct stat st;
    if (0 != fstat(fd, &st) || (size_t)st.st_size != bytes) {
        if (err && errlen) snprintf(err, errlen, "%s: size %lld, expected %zu", g->name,
                                    (long long)st.st_size, bytes);
        close(fd);
        return -1;
    }
    return map_fd(g, fd, bytes, err, errlen);
}

void braid_shm_segment_unlink(braid_shm_segment_t *g)
{
    if (g->linked) (void)shm_unlink(g->name);
    g->linked = false;
}

void braid_shm_segment_close(braid_shm_segment_t *g)
{
    braid_shm_segment_unlink(g);
    if (NULL != g->base) (void)munmap(g->base, g->bytes);
    g->base = NULL;
}
