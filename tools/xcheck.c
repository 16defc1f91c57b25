/* An independent check of `thinwire bench`'s comparison with ENet: thinwire through its C API
 * (libthinwire_ffi, as a C game links it) and ENet through its own, written without any of the
 * bench's code (tools/xcheck.sh builds and runs it; see there).
 *
 *   xcheck rate STACK SIZE CLASS CLIENTS SECONDS   messages per second
 *   xcheck rtt CLASS SECONDS                       round trips, both stacks in turns
 *
 * STACK is thinwire or enet, CLASS reliable or unreliable.
 *
 * rate: a server thread counts the messages it receives for SECONDS after 0.3 s of warm-up;
 * the main thread drives CLIENTS clients (one host and socket each), each in turn queuing a
 * burst of 64 messages of SIZE bytes (fewer when the transport refuses: thinwire's
 * BUFFER_FULL, or ENet holding commands its window kept off the wire), flushing, and reading
 * what arrived. Prints "msg/s SERVER_CPU_NS CLIENT_CPU_NS" (CPU per message, each thread's
 * CLOCK_THREAD_CPUTIME_ID).
 *
 * rtt: one echo pair per stack (a server thread each, which sends every message back at
 * once), both connected throughout; the main thread measures in turns of 100 ms, stack after
 * stack, each round starting with the other one, until each has SECONDS of round trips after
 * 0.3 s of warm-up each. A round trip: one 24-byte message, flush, wait (blocking in the
 * stack's service call, 1 ms at a time) for its echo; an echo not back within 200 ms (the
 * bench's limit) is counted lost and left out of the percentiles. Prints "thinwire P50 P99 N LOST" and "enet P50 P99 N LOST" (µs).
 *
 * Each server is sized for the connections of its run (clients + 8, as the bench's): ENet's
 * service and flush walk every peer slot of their host.
 *
 * The code is written apart from the bench's; the method is the bench's (the same bursts, the
 * same rule for a refusing transport, the same turns), so this checks the bench's figures, not
 * its choice of method.
 *
 * thinwire is encrypted (its default), ENet is not (it has no encryption). */
#define _GNU_SOURCE
#include <enet/enet.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <thinwire.h>

enum { BURST = 64, WARMUP_MS = 300, SLICE_MS = 100, GIVE_UP_MS = 200, MAX_TRIPS = 1 << 22 };

static _Noreturn void die(const char *what, const char *why) {
    fprintf(stderr, "xcheck: %s: %s\n", what, why);
    exit(1);
}

static void tw_check(const char *what, enum thinwire_status s) {
    if (s != THINWIRE_STATUS_OK)
        die(what, thinwire_error_string((int32_t)s));
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n, size);
    if (!p)
        die("memory", "allocation failed");
    return p;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- the two stacks behind one small interface ---- */

typedef struct {
    int thinwire;
    /* thinwire */
    thinwire_host *tw;
    uint64_t conn;
    /* ENet */
    ENetHost *en;
    ENetPeer *peer;
} host;

typedef struct {
    int message; /* 1: a message arrived */
    int connected;
    uint64_t tag; /* its first eight bytes */
    uint8_t channel;
    ENetPeer *from; /* ENet: its peer */
    uint64_t conn;  /* thinwire: its connection */
} event;

static const uint32_t CHANNELS[2] = {THINWIRE_CHANNEL_KIND_RELIABLE_ORDERED,
                                     THINWIRE_CHANNEL_KIND_UNRELIABLE};

/* A server for `capacity` connections. */
static host open_server(int thinwire, uint32_t capacity, uint16_t *port, uint8_t key[32]) {
    host h = {.thinwire = thinwire};
    if (thinwire) {
        struct thinwire_config c = thinwire_config_default(true);
        c.max_connections = capacity;
        c.max_connections_per_source = capacity; /* every client is on 127.0.0.1 */
        c.handshakes_per_second_per_source = 1000;
        tw_check("thinwire server", thinwire_host_create("127.0.0.1:0", &c, &h.tw));
        tw_check("port", thinwire_host_port(h.tw, port));
        tw_check("key", thinwire_host_public_key(h.tw, key));
    } else {
        ENetAddress a;
        enet_address_set_host_ip(&a, "127.0.0.1");
        a.port = 0;
        h.en = enet_host_create(&a, capacity, 2, 0, 0);
        if (!h.en)
            die("enet server", "enet_host_create failed");
        *port = h.en->address.port;
    }
    return h;
}

static host open_client(int thinwire, uint16_t port, const uint8_t key[32]) {
    host h = {.thinwire = thinwire};
    if (thinwire) {
        char to[32];
        snprintf(to, sizeof to, "127.0.0.1:%u", port);
        tw_check("thinwire client", thinwire_host_create("127.0.0.1:0", NULL, &h.tw));
        tw_check("connect", thinwire_connect(h.tw, to, key, CHANNELS, 2, &h.conn));
    } else {
        ENetAddress a;
        enet_address_set_host_ip(&a, "127.0.0.1");
        a.port = port;
        h.en = enet_host_create(NULL, 1, 2, 0, 0);
        if (!h.en)
            die("enet client", "enet_host_create failed");
        h.peer = enet_host_connect(h.en, &a, 2, 0);
        if (!h.peer)
            die("enet client", "enet_host_connect failed");
    }
    return h;
}

static void close_host(host *h) {
    if (h->thinwire)
        thinwire_host_destroy(h->tw);
    else
        enet_host_destroy(h->en);
}

/* Processes the network for at most timeout_ms; returns 1 with an event, 0 without. */
static int service(host *h, uint32_t timeout_ms, event *out) {
    memset(out, 0, sizeof *out);
    if (h->thinwire) {
        struct thinwire_event e;
        tw_check("service", thinwire_host_service(h->tw, timeout_ms, &e));
        switch (e.kind) {
        case THINWIRE_EVENT_TYPE_NONE:
            return 0;
        case THINWIRE_EVENT_TYPE_CONNECTED:
            out->connected = 1;
            out->conn = e.conn;
            return 1;
        case THINWIRE_EVENT_TYPE_MESSAGE: {
            size_t n = thinwire_message_len(e.message);
            if (n >= 8)
                memcpy(&out->tag, thinwire_message_data(e.message), 8);
            thinwire_message_free(e.message);
            out->message = 1;
            out->channel = e.channel;
            out->conn = e.conn;
            return 1;
        }
        default:
            die("thinwire", "a connection ended");
        }
    }
    ENetEvent e;
    int r = enet_host_service(h->en, &e, timeout_ms);
    if (r < 0)
        die("enet", "enet_host_service failed");
    if (r == 0)
        return 0;
    switch (e.type) {
    case ENET_EVENT_TYPE_CONNECT:
        out->connected = 1;
        out->from = e.peer;
        return 1;
    case ENET_EVENT_TYPE_RECEIVE:
        if (e.packet->dataLength >= 8)
            memcpy(&out->tag, e.packet->data, 8);
        enet_packet_destroy(e.packet);
        out->message = 1;
        out->channel = e.channelID;
        out->from = e.peer;
        return 1;
    case ENET_EVENT_TYPE_DISCONNECT:
        die("enet", "a connection ended");
    default:
        return 1;
    }
    return 0;
}

/* Queues one message; returns 0 when the transport refused it for now. */
static int send_msg(host *h, uint64_t conn, ENetPeer *peer, int reliable, const uint8_t *data,
                    size_t len) {
    uint8_t ch = reliable ? 0 : 1;
    if (h->thinwire) {
        enum thinwire_status s = thinwire_send_with(h->tw, conn, ch, data, len, NULL);
        if (s == THINWIRE_STATUS_BUFFER_FULL)
            return 0;
        tw_check("send", s);
        return 1;
    }
    ENetPacket *p = enet_packet_create(
        data, len, reliable ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNSEQUENCED);
    if (!p || enet_peer_send(peer, ch, p) < 0)
        die("enet", "enet_peer_send failed");
    return 1;
}

static void flush(host *h) {
    if (h->thinwire)
        tw_check("flush", thinwire_flush(h->tw));
    else
        enet_host_flush(h->en);
}

/* ENet keeps the commands its window held back in outgoingCommands after a flush. */
static int backlogged(host *h) {
    return !h->thinwire && !enet_list_empty(&h->peer->outgoingCommands);
}

static void wait_connected(host *c, int n) {
    double give_up = now_s() + 20.0;
    for (int i = 0; i < n; i++) {
        event e;
        for (;;) {
            if (now_s() > give_up)
                die("connect", "clients did not connect within 20 s");
            if (service(&c[i], 1, &e) && e.connected)
                break;
        }
    }
}

/* ---- messages per second ---- */

enum { WARMING, MEASURING, STOPPING };

typedef struct {
    host h;
    _Atomic int phase;
    uint64_t at_start, at_end;
    double cpu_start, cpu_end, t_start, t_end;
} rate_server;

static void *rate_serve(void *arg) {
    rate_server *s = arg;
    uint64_t count = 0;
    int seen = WARMING;
    for (;;) {
        int p = atomic_load_explicit(&s->phase, memory_order_relaxed);
        if (p != seen) {
            /* leaving the warm-up starts the measurement, even when this thread sees the
               stop first (the measured time is then too short, which rate() refuses) */
            if (seen == WARMING)
                s->at_start = count, s->cpu_start = cpu_s(), s->t_start = now_s();
            seen = p;
            if (p == STOPPING) {
                s->at_end = count, s->cpu_end = cpu_s(), s->t_end = now_s();
                return NULL;
            }
        }
        event e;
        if (service(&s->h, 1, &e) && e.message)
            count++;
    }
}

static int rate(int thinwire, size_t size, int reliable, int clients, double seconds) {
    rate_server s = {0};
    uint16_t port;
    uint8_t key[32];
    s.h = open_server(thinwire, (uint32_t)clients + 8, &port, key);
    pthread_t t;
    if (pthread_create(&t, NULL, rate_serve, &s) != 0)
        die("thread", "pthread_create failed");
    host *c = xcalloc((size_t)clients, sizeof *c);
    for (int i = 0; i < clients; i++)
        c[i] = open_client(thinwire, port, key);
    wait_connected(c, clients);
    uint8_t *msg = xcalloc(size, 1);
    memset(msg, 7, size);
    uint64_t sent = 0, sent_start = 0;
    double cpu_start = 0, start = now_s(), measure_at = start + WARMUP_MS / 1e3;
    double stop_at = measure_at + seconds;
    int phase = WARMING;
    for (;;) {
        double t_now = now_s();
        if (phase == WARMING && t_now >= measure_at) {
            phase = MEASURING;
            sent_start = sent, cpu_start = cpu_s();
            atomic_store(&s.phase, MEASURING);
        } else if (phase == MEASURING && t_now >= stop_at) {
            break;
        }
        int any = 0;
        for (int i = 0; i < clients; i++) {
            if (!backlogged(&c[i])) {
                for (int k = 0; k < BURST; k++) {
                    if (!send_msg(&c[i], c[i].conn, c[i].peer, reliable, msg, size))
                        break;
                    sent++, any = 1;
                }
            }
            flush(&c[i]);
            event e;
            while (service(&c[i], 0, &e)) {
            }
        }
        if (!any)
            sched_yield();
    }
    double client_cpu = cpu_s() - cpu_start;
    uint64_t client_sent = sent - sent_start;
    atomic_store(&s.phase, STOPPING);
    pthread_join(t, NULL);
    uint64_t got = s.at_end - s.at_start;
    if (s.t_end - s.t_start < 0.5 * seconds)
        die("rate", "the server measured less than half the time asked for");
    printf("%.0f %.1f %.1f\n", (double)got / (s.t_end - s.t_start),
           (s.cpu_end - s.cpu_start) * 1e9 / (double)(got ? got : 1),
           client_cpu * 1e9 / (double)(client_sent ? client_sent : 1));
    for (int i = 0; i < clients; i++)
        close_host(&c[i]);
    close_host(&s.h);
    free(c);
    free(msg);
    return 0;
}

/* ---- round trips ---- */

typedef struct {
    host h;
    _Atomic int stop;
} echo_server;

static void *echo_serve(void *arg) {
    echo_server *s = arg;
    uint8_t msg[24];
    memset(msg, 0x5a, sizeof msg);
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        event e;
        if (service(&s->h, 5, &e) && e.message) {
            memcpy(msg, &e.tag, 8);
            if (!send_msg(&s->h, e.conn, e.from, e.channel == 0, msg, sizeof msg))
                die("echo", "the transport refused the echo");
            flush(&s->h);
        }
    }
    return NULL;
}

typedef struct {
    echo_server server;
    pthread_t thread;
    host client;
    uint64_t next_tag;
    double *trips;
    size_t n, lost;
    double measured;
} pair;

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Round trips for `slice` seconds; counted when `count`. */
static void trips(pair *p, int reliable, double slice, int count) {
    uint8_t msg[24];
    memset(msg, 0x5a, sizeof msg);
    double end = now_s() + slice;
    while (now_s() < end) {
        uint64_t tag = ++p->next_tag;
        memcpy(msg, &tag, 8);
        double t0 = now_s();
        if (!send_msg(&p->client, p->client.conn, p->client.peer, reliable, msg, sizeof msg))
            die("round trip", "the transport refused a message");
        flush(&p->client);
        double rt = -1.0; /* stays negative when the echo was lost */
        for (;;) {
            event e;
            int got = service(&p->client, 1, &e) && e.message && e.tag == tag;
            double t = now_s() - t0;
            if (got) {
                rt = t;
                break;
            }
            if (t > GIVE_UP_MS / 1e3) /* lost: the next one */
                break;
        }
        if (count && rt < 0.0) {
            p->lost++;
        } else if (count) {
            if (p->n == MAX_TRIPS)
                die("rtt", "more round trips than there is room for");
            p->trips[p->n++] = rt;
        }
    }
    if (count)
        p->measured += slice;
}

static int rtt(int reliable, double seconds) {
    pair p[2] = {0};
    for (int s = 0; s < 2; s++) {
        uint16_t port;
        uint8_t key[32];
        p[s].server.h = open_server(s == 0, 8, &port, key);
        if (pthread_create(&p[s].thread, NULL, echo_serve, &p[s].server) != 0)
            die("thread", "pthread_create failed");
        p[s].client = open_client(s == 0, port, key);
        wait_connected(&p[s].client, 1);
        p[s].trips = xcalloc(MAX_TRIPS, sizeof(double));
    }
    double slice = SLICE_MS / 1e3;
    for (int round = 0; p[0].measured < seconds || p[1].measured < seconds; round++) {
        for (int k = 0; k < 2; k++) {
            int s = (round + k) % 2;
            int warm = round * slice >= WARMUP_MS / 1e3;
            if (!warm || p[s].measured < seconds)
                trips(&p[s], reliable, slice, warm);
        }
    }
    for (int s = 0; s < 2; s++) {
        qsort(p[s].trips, p[s].n, sizeof(double), cmp);
        size_t n = p[s].n;
        printf("%s %.1f %.1f %zu %zu\n", s == 0 ? "thinwire" : "enet",
               n ? p[s].trips[n / 2] * 1e6 : 0.0, n ? p[s].trips[n * 99 / 100] * 1e6 : 0.0, n,
               p[s].lost);
        atomic_store(&p[s].server.stop, 1);
        pthread_join(p[s].thread, NULL);
        close_host(&p[s].client);
        close_host(&p[s].server.h);
        free(p[s].trips);
    }
    return 0;
}

/* 1 when `text` is `yes`, 0 when it is `no`; otherwise the program stops naming both. */
static int either(const char *text, const char *yes, const char *no, const char *what) {
    if (!strcmp(text, yes))
        return 1;
    if (strcmp(text, no))
        die(what, "not one of the two names it takes");
    return 0;
}

/* `text` as a whole number in [lo, hi], or the program stops saying which argument. */
static long whole(const char *text, long lo, long hi, const char *what) {
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < lo || v > hi)
        die(what, "out of range or not a whole number");
    return v;
}

/* `text` as seconds in [0.1, max]. */
static double seconds_of(const char *text, double max) {
    char *end;
    double v = strtod(text, &end);
    if (*text == '\0' || *end != '\0' || !(v >= 0.1 && v <= max))
        die("SECONDS", "not a number of seconds from 0.1 to the limit (3600 for rate, 60 for rtt)");
    return v;
}

int main(int argc, char **argv) {
    if (enet_initialize() != 0)
        die("enet", "enet_initialize failed");
    if (argc == 7 && !strcmp(argv[1], "rate"))
        return rate(either(argv[2], "thinwire", "enet", "STACK"), (size_t)whole(argv[3], 8, 1024, "SIZE"),
                    either(argv[4], "reliable", "unreliable", "CLASS"), (int)whole(argv[5], 1, 1000, "CLIENTS"),
                    seconds_of(argv[6], 3600.0));
    if (argc == 4 && !strcmp(argv[1], "rtt"))
        /* 60 s stay below MAX_TRIPS up to 69,000 round trips a second (it stops above) */
        return rtt(either(argv[2], "reliable", "unreliable", "CLASS"), seconds_of(argv[3], 60.0));
    fprintf(stderr, "usage: xcheck rate STACK SIZE CLASS CLIENTS SECONDS\n"
                    "       xcheck rtt CLASS SECONDS\n"
                    "SIZE 8-1024 bytes, CLIENTS 1-1000, SECONDS 0.1-3600 (rtt: 0.1-60)\n");
    return 2;
}
