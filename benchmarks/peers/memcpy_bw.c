/*
 * Single-thread memcpy bandwidth: the physical limit under Conduit's am_bw and put_bw.
 *
 *   memcpy_bw SIZE [SECONDS]   prints "c_memcpy <tab> - <tab> memcpy <tab> SIZE <tab> MBps <tab> VALUE"
 *
 * Copies SIZE bytes from one page-aligned buffer to another in a loop for SECONDS (default 0.5)
 * after a warm-up of a tenth of that; MB/s = bytes copied / elapsed, MB = 10^6 bytes (as conduit
 * perf). Both buffers stay in the caches up to their size, as a sender's and a queue's would.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double run(char *dst, const char *src, size_t size, double seconds) {
    long n = 0;
    double t0 = now_s(), t;
    do {
        for (int j = 0; j < 64; j++) {
            memcpy(dst, src, size);
            __asm__ __volatile__("" : : "r"(dst), "r"(src) : "memory");
        }
        n += 64;
        t = now_s();
    } while (t - t0 < seconds);
    return (double)n * size / (t - t0) / 1e6;
}

int main(int argc, char **argv) {
    size_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : 1 << 20;
    double seconds = argc > 2 ? atof(argv[2]) : 0.5;
    char *src, *dst;
    if (posix_memalign((void **)&src, 4096, size) || posix_memalign((void **)&dst, 4096, size)) return 1;
    memset(src, 1, size);
    memset(dst, 2, size);
    run(dst, src, size, seconds / 10);
    printf("c_memcpy\t-\tmemcpy\t%zu\tMBps\t%.1f\n", size, run(dst, src, size, seconds));
    return 0;
}
