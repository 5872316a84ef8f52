/*
 * Cross-process ping-pong through shared memory: the physical limit under Conduit's am_lat.
 *
 *   pingpong SIZE [ROUNDS]   prints "c_pingpong <tab> - <tab> am_lat <tab> SIZE <tab> p50_us <tab> VALUE"
 *
 * Two processes (fork), a MAP_SHARED|MAP_ANONYMOUS mapping with one slot per direction. A hop
 * copies SIZE bytes from the incoming slot into the outgoing one (one memcpy per hop, which also
 * reads what the peer wrote), then stores the round number into the outgoing slot's flag
 * (release); the peer spins on that flag (acquire). The flag is the first 8 bytes of a 64-byte
 * aligned slot and the payload follows it, so that up to 56 bytes a hop is one cache-line transfer,
 * as a small message's record is in Conduit's queue: the limit a message can reach. (Until
 * 2026-11-30 the payload began on the line after the flag, and a hop of 8 bytes moved two lines.)
 * Each slot starts on a page of its own, as every other peer keeps its two directions apart (the
 * Java limit's about 1 MiB, Agrona's rings 16 MiB): until 2026-12-06 the slots were adjacent, 64
 * bytes apart at 8 bytes, and a hop there was 30-40 % slower (the line next to a written one is
 * likely pulled along by the adjacent-line prefetcher, so each side's spin also fought for the
 * other's slot).
 * Round trips are timed in batches of BATCH with CLOCK_MONOTONIC; the figure is the median batch,
 * divided by BATCH and by 2 (one way), in microseconds. A side spinning on the other looks whether it
 * still lives once per ALIVE_CHECK + 1 spins: the parent ends, naming how the child ended, and the
 * child exits, rather than spin for good on one that died.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 100
#define ALIVE_CHECK ((1UL << 20) - 1)

struct slot_hdr { _Alignas(64) volatile uint64_t flag; };

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static pid_t child, parent;

/* Whether the other process is gone; the parent says how the child ended. */
static int other_gone(void) {
    if (child == 0) return getppid() != parent;
    int status;
    if (waitpid(child, &status, WNOHANG) != child) return 0;
    if (WIFSIGNALED(status))
        fprintf(stderr, "pingpong: the child process (pid %d) was killed by signal %d (%s) during the ping-pong\n",
                (int)child, WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        fprintf(stderr, "pingpong: the child process (pid %d) exited with status %d during the ping-pong\n",
                (int)child, WEXITSTATUS(status));
    return 1;
}

static void wait_for(volatile uint64_t *flag, uint64_t v) {
    for (unsigned long spins = 1; __atomic_load_n(flag, __ATOMIC_ACQUIRE) != v; spins++) {
        __builtin_ia32_pause();
        if ((spins & ALIVE_CHECK) == 0 && other_gone()) {
            if (child == 0) _exit(1);
            exit(1);
        }
    }
}

int main(int argc, char **argv) {
    size_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : 8;
    long rounds = argc > 2 ? atol(argv[2]) : (size <= 4096 ? 2000000 : size <= 65536 ? 200000 : 20000);
    long batches = rounds / BATCH;
    if (batches < 1) {
        fprintf(stderr, "pingpong: ROUNDS is %ld: at least %d are needed, one batch that is timed\n", rounds, BATCH);
        return 2;
    }
    size_t slot = (8 + size + 4095) & ~(size_t)4095; /* a page or more: b is on the page after a's last byte */
    char *base = mmap(NULL, 2 * slot, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) { perror("mmap"); return 1; }
    memset(base, 0, 2 * slot);
    /* slot layout: the flag, then the payload from byte 8, in the flag's line as far as it fits; the mapping is page
       aligned, so each slot starts on a page */
    struct slot_hdr *a = (struct slot_hdr *)base, *b = (struct slot_hdr *)(base + slot);
    char *pa = base + 8, *pb = base + slot + 8;
    long warm = batches / 10 * BATCH;
    long total = warm + batches * BATCH;

    parent = getpid();
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 1; }
    child = pid;
    if (pid == 0) {                       /* pong: a -> b */
        for (long i = 1; i <= total; i++) {
            wait_for(&a->flag, (uint64_t)i);
            memcpy(pb, pa, size);
            __atomic_store_n(&b->flag, (uint64_t)i, __ATOMIC_RELEASE);
        }
        _exit(0);
    }
    double *samples = malloc(sizeof(double) * batches);
    long i = 1;
    for (; i <= warm; i++) {
        memcpy(pa, pb, size);
        __atomic_store_n(&a->flag, (uint64_t)i, __ATOMIC_RELEASE);
        wait_for(&b->flag, (uint64_t)i);
    }
    for (long k = 0; k < batches; k++) {
        double t0 = now_ns();
        for (int j = 0; j < BATCH; j++, i++) {
            memcpy(pa, pb, size);
            __atomic_store_n(&a->flag, (uint64_t)i, __ATOMIC_RELEASE);
            wait_for(&b->flag, (uint64_t)i);
        }
        samples[k] = (now_ns() - t0) / BATCH / 2 / 1000.0;
    }
    waitpid(pid, NULL, 0);
    qsort(samples, batches, sizeof(double), cmp);
    printf("c_pingpong\t-\tam_lat\t%zu\tp50_us\t%.4f\n", size, samples[batches / 2]);
    return 0;
}
