/*
 * One pass over a capture file with libpcap's pcap_next_ex, the loop a C user would write.
 * Prints one line: packets bytes elapsed_ns cpu_ns maxrss_bytes (bytes = sum of caplen).
 *
 * Built by the runner (python -m paclo.perf --peers) with: cc -O2 -o pcap_next_ex_loop pcap_next_ex_loop.c -lpcap
 * Usage: pcap_next_ex_loop FILE [MAX_PACKETS]
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static int64_t ns_of(const struct timespec *ts) {
    return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

int main(int argc, char **argv) {
    char err[PCAP_ERRBUF_SIZE];
    struct pcap_pkthdr *hdr;
    const u_char *data;
    struct timespec w0, w1, c0, c1;
    struct rusage ru;
    uint64_t packets = 0, bytes = 0, max_packets = UINT64_MAX;
    int rc = 1;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s FILE [MAX_PACKETS]\n", argv[0]);
        return 2;
    }
    if (argc == 3) {
        max_packets = strtoull(argv[2], NULL, 10);
    }
    clock_gettime(CLOCK_MONOTONIC, &w0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    pcap_t *p = pcap_open_offline(argv[1], err);
    if (p == NULL) {
        fprintf(stderr, "pcap_open_offline: %s\n", err);
        return 1;
    }
    while (packets < max_packets && (rc = pcap_next_ex(p, &hdr, &data)) == 1) {
        packets++;
        bytes += hdr->caplen;
    }
    if (packets < max_packets && rc == -1) {
        fprintf(stderr, "pcap_next_ex: %s\n", pcap_geterr(p));
        pcap_close(p);
        return 1;
    }
    pcap_close(p);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    getrusage(RUSAGE_SELF, &ru);
    printf("%llu %llu %lld %lld %lld\n", (unsigned long long)packets, (unsigned long long)bytes,
           (long long)(ns_of(&w1) - ns_of(&w0)), (long long)(ns_of(&c1) - ns_of(&c0)),
           (long long)ru.ru_maxrss * 1024LL);
    return 0;
}
