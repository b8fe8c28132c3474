/*
 * The reference UDP sender in C: what paclo's generator is compared with in the same run.
 * Same design as paclo's (connected UDP sockets, one pthread each, sendmmsg batches, pacing
 * by absolute deadlines start + i / rate, ENOBUFS/EAGAIN retried and counted), written the
 * plain way a C programmer would.
 *
 * Built by the runner with: cc -O2 -pthread -o udp_sendmmsg udp_sendmmsg.c
 * Usage: udp_sendmmsg --host H --port P --rate PPS (--packets N | --duration-ms MS | both)
 *                     [--senders 1] [--batch 64] [--frame-size 64] [--cpus 0,1]
 * Prints one JSON object: sent, elapsed_ns, window_ns, realized_pps, retries, per_sender.
 * Exits 1 on a send error (with the reason on stderr), 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SENDERS 64
#define MAX_BATCH 1024
#define SPIN_NS 50000ULL

struct sender {
    int fd;
    int cpu;
    uint64_t share; /* UINT64_MAX: bounded by the deadline only */
    uint64_t rate;
    uint64_t sent, calls, retries;
    uint64_t first_ns, last_ns; /* UINT64_MAX: none yet */
    int err;
};

static uint64_t g_deadline_ns = UINT64_MAX;
static unsigned g_batch = 64;
static size_t g_payload_len = 36;
static struct timespec g_start;
static pthread_barrier_t g_barrier;
static atomic_int g_stop;

static uint64_t since_start(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)(now.tv_sec - g_start.tv_sec) * 1000000000ULL + (uint64_t)now.tv_nsec -
           (uint64_t)g_start.tv_nsec;
}

static uint64_t due_before(uint64_t ns, uint64_t rate) {
    unsigned __int128 x = (unsigned __int128)ns * rate;
    return (uint64_t)((x + 999999999ULL) / 1000000000ULL);
}

static uint64_t due_by(uint64_t ns, uint64_t rate) {
    return (uint64_t)((unsigned __int128)ns * rate / 1000000000ULL) + 1;
}

static uint64_t due_at(uint64_t i, uint64_t rate) {
    return (uint64_t)(((unsigned __int128)i * 1000000000ULL + rate - 1) / rate);
}

static void wait_until(uint64_t due_ns) {
    for (;;) {
        uint64_t now = since_start();
        if (now >= due_ns) return;
        uint64_t left = due_ns - now;
        if (left > SPIN_NS) {
            struct timespec ts = {(time_t)((left - SPIN_NS) / 1000000000ULL),
                                  (long)((left - SPIN_NS) % 1000000000ULL)};
            nanosleep(&ts, NULL);
        }
    }
}

static void *run_sender(void *arg) {
    struct sender *s = arg;
    static char payload[65536];
    struct iovec iov[MAX_BATCH];
    struct mmsghdr msgs[MAX_BATCH];
    memset(msgs, 0, sizeof(msgs));
    for (unsigned j = 0; j < g_batch; j++) {
        iov[j].iov_base = payload;
        iov[j].iov_len = g_payload_len;
        msgs[j].msg_hdr.msg_iov = &iov[j];
        msgs[j].msg_hdr.msg_iovlen = 1;
    }
    if (s->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(s->cpu, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) s->err = EINVAL;
    }
    pthread_barrier_wait(&g_barrier);
    uint64_t total = s->share;
    if (g_deadline_ns != UINT64_MAX) {
        uint64_t by_deadline = due_before(g_deadline_ns, s->rate);
        if (by_deadline < total) total = by_deadline;
    }
    uint64_t i = 0;
    unsigned busy = 0, singles = 0;
    while (!s->err && i < total && !atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        uint64_t now = since_start();
        if (now >= g_deadline_ns) break;
        uint64_t due = due_by(now, s->rate);
        if (due > total) due = total;
        if (due <= i) {
            wait_until(due_at(i, s->rate));
            continue;
        }
        uint64_t want = due - i;
        if (want > g_batch) want = g_batch;
        /* a short count hides the error of the next datagram: send the next ones alone */
        if (singles) {
            singles--;
            want = 1;
        }
        int rc = sendmmsg(s->fd, msgs, (unsigned)want, 0);
        if (rc > 0) {
            uint64_t after = since_start();
            if (s->first_ns == UINT64_MAX) s->first_ns = after;
            s->last_ns = after;
            s->calls++;
            i += (uint64_t)rc;
            busy = 0;
            if ((uint64_t)rc < want) singles = 2;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == ENOBUFS || errno == EAGAIN) {
            s->retries++;
            if (++busy > 16) {
                struct timespec ts = {0, 50000};
                nanosleep(&ts, NULL);
            } else {
                sched_yield();
            }
        } else {
            s->err = errno;
            atomic_store(&g_stop, 1);
        }
    }
    s->sent = i;
    return NULL;
}

static double window_rate(uint64_t count, uint64_t first, uint64_t last) {
    if (count < 2 || first == UINT64_MAX || last <= first) return -1.0;
    return (double)(count - 1) * 1e9 / (double)(last - first);
}

static void print_rate(double r) {
    if (r < 0) printf("null");
    else printf("%.3f", r);
}

static int usage(const char *msg) {
    fprintf(stderr, "udp_sendmmsg: %s\n", msg);
    return 2;
}

int main(int argc, char **argv) {
    const char *host = NULL, *port = NULL, *cpus = NULL;
    uint64_t rate = 0, packets = 0, duration_ms = 0;
    unsigned senders = 1;
    long frame_size = 64;
    static struct option longopts[] = {
        {"host", required_argument, 0, 'h'},   {"port", required_argument, 0, 'p'},
        {"rate", required_argument, 0, 'r'},   {"packets", required_argument, 0, 'n'},
        {"duration-ms", required_argument, 0, 'd'}, {"senders", required_argument, 0, 's'},
        {"batch", required_argument, 0, 'b'},  {"frame-size", required_argument, 0, 'f'},
        {"cpus", required_argument, 0, 'c'},   {0, 0, 0, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': host = optarg; break;
        case 'p': port = optarg; break;
        case 'r': rate = strtoull(optarg, NULL, 10); break;
        case 'n': packets = strtoull(optarg, NULL, 10); break;
        case 'd': duration_ms = strtoull(optarg, NULL, 10); break;
        case 's': senders = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'b': g_batch = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'f': frame_size = strtol(optarg, NULL, 10); break;
        case 'c': cpus = optarg; break;
        default: return usage("unknown argument");
        }
    }
    if (!host || !port) return usage("--host and --port are required");
    if (rate == 0) return usage("--rate must be positive");
    if (packets == 0 && duration_ms == 0) return usage("give --packets, --duration-ms or both");
    if (senders == 0 || senders > MAX_SENDERS || senders > rate) return usage("bad --senders");
    if (packets && senders > packets) return usage("senders cannot exceed packets");
    if (g_batch == 0 || g_batch > MAX_BATCH) return usage("--batch must be between 1 and 1024");
    if (frame_size <= 0 || frame_size > 65535) return usage("bad --frame-size");

    struct addrinfo hints = {0}, *ai;
    hints.ai_socktype = SOCK_DGRAM;
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai != 0) {
        fprintf(stderr, "udp_sendmmsg: cannot resolve %s: %s\n", host, gai_strerror(gai));
        return 1;
    }
    long headers = ai->ai_family == AF_INET6 ? 48 : 28;
    g_payload_len = frame_size > headers ? (size_t)(frame_size - headers) : 1;
    if (duration_ms) g_deadline_ns = duration_ms * 1000000ULL;

    struct sender s[MAX_SENDERS];
    pthread_t th[MAX_SENDERS];
    int cpu_list[MAX_SENDERS], ncpus = 0;
    if (cpus) {
        char *copy = strdup(cpus), *tok, *save = NULL;
        for (tok = strtok_r(copy, ",", &save); tok && ncpus < MAX_SENDERS; tok = strtok_r(NULL, ",", &save))
            cpu_list[ncpus++] = atoi(tok);
        free(copy);
    }
    for (unsigned k = 0; k < senders; k++) {
        memset(&s[k], 0, sizeof(s[k]));
        s[k].first_ns = UINT64_MAX;
        s[k].cpu = ncpus ? cpu_list[k % (unsigned)ncpus] : -1;
        s[k].share = packets ? packets / senders + (k < packets % senders) : UINT64_MAX;
        s[k].rate = rate / senders + (k < rate % senders);
        s[k].fd = socket(ai->ai_family, SOCK_DGRAM, 0);
        if (s[k].fd < 0 || connect(s[k].fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            fprintf(stderr, "udp_sendmmsg: socket/connect: %s\n", strerror(errno));
            return 1;
        }
    }
    freeaddrinfo(ai);
    pthread_barrier_init(&g_barrier, NULL, senders + 1);
    for (unsigned k = 0; k < senders; k++) pthread_create(&th[k], NULL, run_sender, &s[k]);
    clock_gettime(CLOCK_MONOTONIC, &g_start);
    pthread_barrier_wait(&g_barrier);
    for (unsigned k = 0; k < senders; k++) pthread_join(th[k], NULL);
    uint64_t elapsed = since_start();

    uint64_t sent = 0, retries = 0, first = UINT64_MAX, last = 0, active = 0;
    int err = 0;
    for (unsigned k = 0; k < senders; k++) {
        sent += s[k].sent;
        retries += s[k].retries;
        active += s[k].sent > 0;
        if (s[k].first_ns < first) first = s[k].first_ns;
        if (s[k].first_ns != UINT64_MAX && s[k].last_ns > last) last = s[k].last_ns;
        if (s[k].err && !err) err = s[k].err;
        close(s[k].fd);
    }
    if (err) {
        fprintf(stderr, "udp_sendmmsg: send failed after %llu datagrams: %s\n", (unsigned long long)sent,
                strerror(err));
        return 1;
    }
    printf("{\"sent\": %llu, \"elapsed_ns\": %llu, \"window_ns\": ", (unsigned long long)sent,
           (unsigned long long)elapsed);
    if (first == UINT64_MAX) printf("null");
    else printf("%llu", (unsigned long long)(last - first));
    printf(", \"realized_pps\": ");
    /* (sent - senders that sent) intervals: each sender's first datagram starts its own */
    print_rate(active ? window_rate(sent - (active - 1), first, last) : -1.0);
    printf(", \"retries\": %llu, \"senders\": %u, \"batch\": %u, \"per_sender\": [", (unsigned long long)retries,
           senders, g_batch);
    for (unsigned k = 0; k < senders; k++) {
        printf("%s{\"sent\": %llu, \"calls\": %llu, \"retries\": %llu, \"realized_pps\": ", k ? ", " : "",
               (unsigned long long)s[k].sent, (unsigned long long)s[k].calls, (unsigned long long)s[k].retries);
        print_rate(window_rate(s[k].sent, s[k].first_ns, s[k].last_ns));
        printf("}");
    }
    printf("]}\n");
    return 0;
}
