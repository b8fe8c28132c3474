/* The floor for reading a classic pcap file: mmap it and walk its 16-byte record headers,
 * summing packets and captured bytes. Prints "packets=N bytes=N ns_per_packet=X
 * cpu_ns_per_packet=Y" on stdout: wall-clock and process CPU time per packet, the median
 * of the passes, after one untimed pass (the file in the page cache).
 *
 * Build: cc -O2 -o mmap_walk mmap_walk.c
 * Run:   ./mmap_walk FILE [PASSES]
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint32_t rd32(const unsigned char *p, int swap) {
    uint32_t v;
    memcpy(&v, p, 4);
    return swap ? __builtin_bswap32(v) : v;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [PASSES]\n", argv[0]);
        return 1;
    }
    int passes = argc > 2 ? atoi(argv[2]) : 5;
    if (passes < 1) passes = 1;
    if (passes > 99) passes = 99;
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 24) {
        fprintf(stderr, "%s: cannot open a classic pcap file\n", argv[1]);
        return 2;
    }
    size_t len = (size_t)st.st_size;
    const unsigned char *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    uint32_t magic;
    memcpy(&magic, m, 4);
    int swap;
    if (magic == 0xA1B2C3D4 || magic == 0xA1B23C4D) swap = 0;
    else if (magic == 0xD4C3B2A1 || magic == 0x4D3CB2A1) swap = 1;
    else {
        fprintf(stderr, "%s: not a classic pcap file\n", argv[1]);
        return 2;
    }
    double wall[100], cpu[100];
    unsigned long long packets = 0, bytes = 0;
    for (int r = -1; r < passes; r++) {
        double t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
        size_t off = 24;
        packets = 0;
        bytes = 0;
        while (off + 16 <= len) {
            uint32_t caplen = rd32(m + off + 8, swap);
            if (off + 16 + caplen > len) break;
            packets++;
            bytes += caplen;
            off += 16 + caplen;
        }
        double t1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
        if (r >= 0 && packets) {
            wall[r] = (t1 - t0) / (double)packets;
            cpu[r] = (c1 - c0) / (double)packets;
        }
    }
    qsort(wall, passes, sizeof wall[0], cmp);
    qsort(cpu, passes, sizeof cpu[0], cmp);
    printf("packets=%llu bytes=%llu ns_per_packet=%.2f cpu_ns_per_packet=%.2f\n", packets, bytes,
           wall[passes / 2], cpu[passes / 2]);
    munmap((void *)m, len);
    close(fd);
    return 0;
}
