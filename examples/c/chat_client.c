/* thinwire chat client: connects to an echo server, sends COUNT numbered lines on a
 * reliable-ordered channel and checks that every echo comes back, in order.
 *
 *   chat_client ADDRESS KEY [COUNT]    e.g. chat_client 127.0.0.1:7777 3f9a...c2 50
 *
 * KEY is the server's public key, 64 hex digits (echo_server prints it): only that server can
 * complete the handshake. Exits 0 when all COUNT echoes arrived in order within 10 s, 1
 * otherwise (with a wrong key: at once, "disconnected (reason 7, refuse reason 7)": refused,
 * THINWIRE_REFUSE_REASON_UNKNOWN_SERVER_KEY). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "thinwire.h"

static int fail(const char *what, thinwire_status st) {
    fprintf(stderr, "chat_client: %s: %s\n", what, thinwire_error_string(st));
    return 1;
}

/* Services the host until an event of `kind` arrives (THINWIRE_EVENT_TYPE_NONE: until
 * `on_message` says it is done) or `seconds` pass; messages on the way go to `on_message`. */
static int wait_for(thinwire_host *host, thinwire_event_type kind, int seconds,
                    int (*on_message)(thinwire_event *, void *), void *ctx) {
    time_t end = time(NULL) + seconds;
    while (time(NULL) < end) {
        thinwire_event ev;
        thinwire_status st = thinwire_host_service(host, 50, &ev);
        if (st != THINWIRE_STATUS_OK) return fail("service", st);
        if (ev.kind == THINWIRE_EVENT_TYPE_MESSAGE) {
            int done = on_message ? on_message(&ev, ctx) : 0;
            thinwire_message_free(ev.message);
            if (done) return 0;
        } else if (ev.kind != THINWIRE_EVENT_TYPE_NONE && ev.kind == kind) {
            return 0;
        } else if (ev.kind == THINWIRE_EVENT_TYPE_DISCONNECTED) {
            fprintf(stderr, "chat_client: disconnected (reason %d, refuse reason %d)\n", (int)ev.reason,
                    (int)ev.refuse_reason);
            return 1;
        }
    }
    fprintf(stderr, "chat_client: timed out\n");
    return 1;
}

struct echoes { int expected, next, bad; };

static int on_echo(thinwire_event *ev, void *ctx) {
    struct echoes *e = ctx;
    char want[64];
    snprintf(want, sizeof want, "line %d", e->next);
    size_t len = thinwire_message_len(ev->message);
    if (len != strlen(want) || memcmp(thinwire_message_data(ev->message), want, len) != 0) e->bad++;
    e->next++;
    return e->next == e->expected;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: chat_client ADDRESS KEY [COUNT]\n"); return 2; }
    uint8_t key[32];
    thinwire_status st = thinwire_public_key_parse(argv[2], key);
    if (st != THINWIRE_STATUS_OK) return fail("key", st);
    int count = argc > 3 ? atoi(argv[3]) : 50;
    thinwire_config config = thinwire_config_default(false);
    thinwire_host *host = NULL;
    st = thinwire_host_create("127.0.0.1:0", &config, &host);
    if (st != THINWIRE_STATUS_OK) return fail("create", st);

    uint32_t channels[] = {THINWIRE_CHANNEL_KIND_RELIABLE_ORDERED};
    uint64_t conn = 0;
    st = thinwire_connect(host, argv[1], key, channels, 1, &conn);
    if (st != THINWIRE_STATUS_OK) { thinwire_host_destroy(host); return fail("connect", st); }
    /* longer than the 5 s handshake timeout, so that a failed handshake reports its reason */
    if (wait_for(host, THINWIRE_EVENT_TYPE_CONNECTED, 8, NULL, NULL)) { thinwire_host_destroy(host); return 1; }

    for (int i = 0; i < count; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "line %d", i);
        st = thinwire_send_with(host, conn, 0, (const uint8_t *)line, (size_t)n, NULL);
        if (st != THINWIRE_STATUS_OK) { thinwire_host_destroy(host); return fail("send", st); }
    }
    thinwire_flush(host);

    struct echoes e = {count, 0, 0};
    int code = count == 0 ? 0 : wait_for(host, THINWIRE_EVENT_TYPE_NONE, 10, on_echo, &e);
    thinwire_connection_stats stats;
    if (thinwire_connection_get_stats(host, conn, &stats) == THINWIRE_STATUS_OK)
        printf("chat_client: %d of %d echoes in order, %d wrong; srtt %llu us, %llu packets sent\n",
               e.next, count, e.bad, (unsigned long long)stats.srtt_us,
               (unsigned long long)stats.packets_sent);
    if (e.bad) code = 1;

    thinwire_disconnect(host, conn, 0);
    wait_for(host, THINWIRE_EVENT_TYPE_DISCONNECTED, 2, NULL, NULL);
    thinwire_host_destroy(host);
    return code;
}
