/*
 * The floor of a raw read: one pass over the records of a classic pcap file mapped into memory
 * (mmap, MADV_SEQUENTIAL), reading each record's caplen and touching its last captured byte.
 * No decode, no copy, no library. Prints one line: packets bytes elapsed_ns cpu_ns maxrss_bytes
 * (bytes = sum of caplen), the format of pcap_next_ex_loop.c.
 *
 * Built by the runner (python -m paclo.perf) with: cc -O2 -o mmap_walk mmap_walk.c
 * Usage: mmap_walk FILE [MAX_PACKETS]
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int64_t ns_of(const struct timespec *ts) {
    return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static uint32_t u32_at(const unsigned char *p, int swap) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return swap ? __builtin_bswap32(v) : v;
}

int main(int argc, char **argv) {
    struct timespec w0, w1, c0, c1;
    struct rusage ru;
    struct stat st;
    uint64_t packets = 0, bytes = 0, max_packets = UINT64_MAX;
    unsigned sum = 0;
    int swap;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s FILE [MAX_PACKETS]\n", argv[0]);
        return 2;
    }
    if (argc == 3) {
        max_packets = strtoull(argv[2], NULL, 10);
    }
    clock_gettime(CLOCK_MONOTONIC, &w0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    size_t size = (size_t)st.st_size;
    if (size < 24) {
        fprintf(stderr, "%s: %zu bytes, shorter than a pcap file header\n", argv[1], size);
        return 1;
    }
    const unsigned char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    close(fd);
    madvise((void *)map, size, MADV_SEQUENTIAL);
    uint32_t magic;
    memcpy(&magic, map, sizeof magic);
    if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du) {
        swap = 0;
    } else if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u) {
        swap = 1;
    } else {
        fprintf(stderr, "%s: not a classic pcap file (magic 0x%08x)\n", argv[1], magic);
        return 1;
    }
    size_t off = 24;
    while (packets < max_packets && size - off >= 16) {
        uint32_t caplen = u32_at(map + off + 8, swap);
        off += 16;
        if (caplen > size - off) {
            fprintf(stderr, "%s: record %llu runs past the end of the file\n", argv[1],
                    (unsigned long long)packets + 1);
            return 1;
        }
        if (caplen) {
            sum += map[off + caplen - 1];
        }
        off += caplen;
        packets++;
        bytes += caplen;
    }
    if (packets < max_packets && off != size) {
        fprintf(stderr, "%s: %zu bytes after the last whole record\n", argv[1], size - off);
        return 1;
    }
    munmap((void *)map, size);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    getrusage(RUSAGE_SELF, &ru);
    /* the touched bytes go to stderr so that the compiler cannot drop the reads */
    fprintf(stderr, "checksum %u\n", sum);
    printf("%llu %llu %lld %lld %lld\n", (unsigned long long)packets, (unsigned long long)bytes,
           (long long)(ns_of(&w1) - ns_of(&w0)), (long long)(ns_of(&c1) - ns_of(&c0)),
           (long long)ru.ru_maxrss * 1024LL);
    return 0;
}
