/*
 * Plain libpcap live capture in C, beside paclo in the same run: opens the device with the
 * same options paclo's scenario uses (pcap_create + snaplen, promisc, timeout, buffer size,
 * immediate mode, nanosecond time stamps, pcap_activate, the BPF filter), then reads the way
 * a careful C program does (non-blocking, poll() on the selectable descriptor, pcap_dispatch)
 * and counts packets and captured bytes.
 *
 * Built by the runner with: cc -O2 -o pcap_live_count pcap_live_count.c -lpcap
 * Usage: pcap_live_count --device D [--filter F] [--snaplen 2048] [--promisc 1]
 *          [--timeout-ms 10] [--buffer-size B] [--immediate 0|1] [--limit N]
 *          [--duration-ms MS] [--idle-ms MS] [--ready-file PATH]
 * Without --buffer-size / --immediate those options keep libpcap's defaults.
 * Writes "ready" to the ready file after activation and the filter, then captures until the
 * limit, the duration (from ready) or the idle time without a packet. Prints one JSON object:
 * packets, bytes, first_ts_ns, last_ts_ns, received, dropped, interface_dropped, elapsed_ns
 * and cpu_ns (from ready to the end), maxrss_bytes, stop_reason. Exit 1 on a libpcap error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct counts {
    uint64_t packets, bytes, limit;
    int64_t first_ts, last_ts;
    int nano;
};

static int64_t mono_ns(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes) {
    (void)bytes;
    struct counts *c = (struct counts *)user;
    int64_t ts = (int64_t)h->ts.tv_sec * 1000000000LL + (int64_t)h->ts.tv_usec * (c->nano ? 1 : 1000);
    if (c->packets == 0) c->first_ts = ts;
    c->last_ts = ts;
    c->packets++;
    c->bytes += h->caplen;
}

static int fail(pcap_t *p, const char *what, const char *msg) {
    fprintf(stderr, "pcap_live_count: %s: %s\n", what, msg);
    if (p) pcap_close(p);
    return 1;
}

int main(int argc, char **argv) {
    const char *device = NULL, *filter = NULL, *ready_file = NULL;
    long snaplen = 2048, promisc = 1, timeout_ms = 10, buffer_size = -1, immediate = -1;
    int64_t duration_ms = -1, idle_ms = -1;
    struct counts c = {0, 0, UINT64_MAX, 0, 0, 0};
    static struct option longopts[] = {
        {"device", required_argument, 0, 'd'},      {"filter", required_argument, 0, 'f'},
        {"snaplen", required_argument, 0, 's'},     {"promisc", required_argument, 0, 'p'},
        {"timeout-ms", required_argument, 0, 't'},  {"buffer-size", required_argument, 0, 'b'},
        {"immediate", required_argument, 0, 'i'},   {"limit", required_argument, 0, 'l'},
        {"duration-ms", required_argument, 0, 'D'}, {"idle-ms", required_argument, 0, 'I'},
        {"ready-file", required_argument, 0, 'r'},  {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case 'd': device = optarg; break;
        case 'f': filter = optarg; break;
        case 's': snaplen = strtol(optarg, NULL, 10); break;
        case 'p': promisc = strtol(optarg, NULL, 10); break;
        case 't': timeout_ms = strtol(optarg, NULL, 10); break;
        case 'b': buffer_size = strtol(optarg, NULL, 10); break;
        case 'i': immediate = strtol(optarg, NULL, 10); break;
        case 'l': c.limit = strtoull(optarg, NULL, 10); break;
        case 'D': duration_ms = strtoll(optarg, NULL, 10); break;
        case 'I': idle_ms = strtoll(optarg, NULL, 10); break;
        case 'r': ready_file = optarg; break;
        default: fprintf(stderr, "pcap_live_count: unknown argument\n"); return 2;
        }
    }
    if (!device) {
        fprintf(stderr, "pcap_live_count: --device is required\n");
        return 2;
    }
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_create(device, err);
    if (!p) return fail(NULL, "pcap_create", err);
    pcap_set_snaplen(p, (int)snaplen);
    pcap_set_promisc(p, (int)promisc);
    pcap_set_timeout(p, (int)timeout_ms);
    if (buffer_size >= 0) pcap_set_buffer_size(p, (int)buffer_size);
    if (immediate >= 0) pcap_set_immediate_mode(p, (int)immediate);
    c.nano = pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO) == 0;
    int rc = pcap_activate(p);
    if (rc < 0) return fail(p, "pcap_activate", pcap_statustostr(rc));
    c.nano = pcap_get_tstamp_precision(p) == PCAP_TSTAMP_PRECISION_NANO;
    if (filter && *filter) {
        struct bpf_program prog;
        bpf_u_int32 net = 0, mask = 0;
        if (pcap_lookupnet(device, &net, &mask, err) != 0) mask = 0;
        if (pcap_compile(p, &prog, filter, 1, mask) != 0) return fail(p, "pcap_compile", pcap_geterr(p));
        if (pcap_setfilter(p, &prog) != 0) return fail(p, "pcap_setfilter", pcap_geterr(p));
        pcap_freecode(&prog);
    }
    if (pcap_setnonblock(p, 1, err) != 0) return fail(p, "pcap_setnonblock", err);
    int fd = pcap_get_selectable_fd(p);
    if (fd < 0) return fail(p, "pcap_get_selectable_fd", "no selectable descriptor");

    int64_t t0 = mono_ns(CLOCK_MONOTONIC), cpu0 = mono_ns(CLOCK_PROCESS_CPUTIME_ID);
    if (ready_file) {
        FILE *f = fopen(ready_file, "w");
        if (!f) return fail(p, "ready file", strerror(errno));
        fputs("ready\n", f);
        fclose(f);
    }
    int64_t last_packet = t0;
    const char *reason = NULL;
    while (!reason) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int pr = poll(&pfd, 1, 25);
        if (pr < 0 && errno != EINTR) return fail(p, "poll", strerror(errno));
        for (;;) {
            uint64_t before = c.packets;
            int want = c.limit == UINT64_MAX ? -1 : (int)(c.limit - c.packets);
            int n = pcap_dispatch(p, want, on_packet, (u_char *)&c);
            if (n < 0) return fail(p, "pcap_dispatch", pcap_geterr(p));
            if (c.packets != before) last_packet = mono_ns(CLOCK_MONOTONIC);
            if (n == 0 || c.packets >= c.limit) break;
        }
        int64_t now = mono_ns(CLOCK_MONOTONIC);
        if (c.packets >= c.limit) reason = "max_packets";
        else if (duration_ms >= 0 && now - t0 >= duration_ms * 1000000LL) reason = "max_time";
        else if (idle_ms >= 0 && now - last_packet >= idle_ms * 1000000LL) reason = "idle_timeout";
    }
    struct pcap_stat st;
    int have_stats = pcap_stats(p, &st) == 0;
    int64_t elapsed = mono_ns(CLOCK_MONOTONIC) - t0, cpu = mono_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    pcap_close(p);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"packets\": %llu, \"bytes\": %llu, ", (unsigned long long)c.packets, (unsigned long long)c.bytes);
    if (c.packets) printf("\"first_ts_ns\": %lld, \"last_ts_ns\": %lld, ", (long long)c.first_ts, (long long)c.last_ts);
    else printf("\"first_ts_ns\": null, \"last_ts_ns\": null, ");
    if (have_stats)
        printf("\"received\": %u, \"dropped\": %u, \"interface_dropped\": %u, ", st.ps_recv, st.ps_drop, st.ps_ifdrop);
    else
        printf("\"received\": null, \"dropped\": null, \"interface_dropped\": null, ");
    printf("\"elapsed_ns\": %lld, \"cpu_ns\": %lld, \"maxrss_bytes\": %lld, \"stop_reason\": \"%s\"}\n",
           (long long)elapsed, (long long)cpu, (long long)ru.ru_maxrss * 1024LL, reason);
    return 0;
}
