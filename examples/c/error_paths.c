/* Every error path of the C API, checked: null pointers, bad arguments, a bad channel, an
 * oversized message, an unknown connection, a closed host. Prints "N passed, M failed" and
 * exits 0 only if every check passed. Needs no peer (nothing is sent anywhere). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thinwire.h"

static int passed, failed;

static void check(const char *what, thinwire_status got, thinwire_status want) {
    if (got == want) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL %s: got %d (%s), want %d (%s)\n", what, (int)got,
                thinwire_error_string(got), (int)want, thinwire_error_string(want));
    }
}

static void check_true(const char *what, int ok) {
    if (ok) passed++;
    else { failed++; fprintf(stderr, "FAIL %s\n", what); }
}

int main(void) {
    thinwire_host *host = NULL;
    thinwire_config config = thinwire_config_default(false);
    uint8_t data[4] = {1, 2, 3, 4};
    thinwire_event ev;

    /* creating */
    check("create: null address", thinwire_host_create(NULL, &config, &host), THINWIRE_STATUS_NULL_POINTER);
    check("create: null out", thinwire_host_create("127.0.0.1:0", &config, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("create: not an address", thinwire_host_create("localhost", &config, &host), THINWIRE_STATUS_INVALID_ARGUMENT);
    thinwire_config bad = config;
    bad.fault_drop_rate = 2.0;
    check("create: drop rate 2", thinwire_host_create("127.0.0.1:0", &bad, &host), THINWIRE_STATUS_INVALID_ARGUMENT);
    check_true("create: no host after errors", host == NULL);
    check("create", thinwire_host_create("127.0.0.1:0", NULL, &host), THINWIRE_STATUS_OK);
    check_true("create: host set", host != NULL);

    /* connecting */
    uint32_t kinds[] = {THINWIRE_CHANNEL_KIND_UNRELIABLE, THINWIRE_CHANNEL_KIND_RELIABLE_ORDERED};
    uint32_t bad_kind[] = {99};
    uint64_t conn = 0;
    check("connect: null host", thinwire_connect(NULL, "127.0.0.1:9", kinds, 2, &conn), THINWIRE_STATUS_NULL_POINTER);
    check("connect: null address", thinwire_connect(host, NULL, kinds, 2, &conn), THINWIRE_STATUS_NULL_POINTER);
    check("connect: null channels", thinwire_connect(host, "127.0.0.1:9", NULL, 2, &conn), THINWIRE_STATUS_NULL_POINTER);
    check("connect: null out", thinwire_connect(host, "127.0.0.1:9", kinds, 2, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("connect: bad kind", thinwire_connect(host, "127.0.0.1:9", bad_kind, 1, &conn), THINWIRE_STATUS_INVALID_ARGUMENT);
    check("connect: no channels", thinwire_connect(host, "127.0.0.1:9", kinds, 0, &conn), THINWIRE_STATUS_INVALID_ARGUMENT);
    check("connect", thinwire_connect(host, "127.0.0.1:9", kinds, 2, &conn), THINWIRE_STATUS_OK);

    /* sending (queued: the handshake has not completed) */
    check("send: null host", thinwire_send(NULL, conn, 0, data, 4), THINWIRE_STATUS_NULL_POINTER);
    check("send: null data", thinwire_send(host, conn, 0, NULL, 4), THINWIRE_STATUS_NULL_POINTER);
    check("send: empty", thinwire_send(host, conn, 1, NULL, 0), THINWIRE_STATUS_OK);
    check("send: bad channel", thinwire_send(host, conn, 5, data, 4), THINWIRE_STATUS_UNKNOWN_CHANNEL);
    check("send: unknown connection", thinwire_send(host, conn + 1000, 0, data, 4), THINWIRE_STATUS_UNKNOWN_CONNECTION);
    size_t big_len = 1 << 20;
    uint8_t *big = calloc(big_len, 1);
    check("send: oversized unreliable", thinwire_send(host, conn, 0, big, big_len), THINWIRE_STATUS_MESSAGE_TOO_LARGE);
    free(big);
    check("send_latest: wrong class", thinwire_send_latest(host, conn, 1, 7, data, 4), THINWIRE_STATUS_WRONG_CHANNEL_KIND);
    thinwire_deadline deadline = {500, 1.5};
    check("send_deadline: bad target", thinwire_send_deadline(host, conn, 1, data, 4, &deadline), THINWIRE_STATUS_INVALID_DEADLINE);
    check("send_deadline: null deadline", thinwire_send_deadline(host, conn, 1, data, 4, NULL), THINWIRE_STATUS_NULL_POINTER);
    deadline.target = 0.999;
    check("send_deadline", thinwire_send_deadline(host, conn, 1, data, 4, &deadline), THINWIRE_STATUS_OK);

    /* servicing, statistics, disconnecting */
    check("service: null event", thinwire_host_service(host, 0, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("service: null host", thinwire_host_service(NULL, 0, &ev), THINWIRE_STATUS_NULL_POINTER);
    check("service", thinwire_host_service(host, 0, &ev), THINWIRE_STATUS_OK);
    thinwire_connection_stats stats;
    check("stats: null out", thinwire_connection_get_stats(host, conn, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("stats: unknown connection", thinwire_connection_get_stats(host, conn + 1000, &stats), THINWIRE_STATUS_UNKNOWN_CONNECTION);
    check("stats", thinwire_connection_get_stats(host, conn, &stats), THINWIRE_STATUS_OK);
    check("disconnect: unknown connection", thinwire_disconnect(host, conn + 1000, 0), THINWIRE_STATUS_UNKNOWN_CONNECTION);
    uint16_t port = 0;
    check("port: null out", thinwire_host_port(host, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("port", thinwire_host_port(host, &port), THINWIRE_STATUS_OK);
    check_true("port: non-zero", port != 0);

    /* messages: null handles are harmless */
    check_true("message data: null", thinwire_message_data(NULL) == NULL);
    check_true("message len: null", thinwire_message_len(NULL) == 0);
    thinwire_message_free(NULL);

    /* error strings: every code has one, unknown codes too */
    for (int code = 0; code <= 15; code++) {
        const char *s = thinwire_error_string((thinwire_status)code);
        check_true("error string", s != NULL && strlen(s) > 0 && strcmp(s, "unknown status code") != 0);
    }
    check_true("error string: unknown", strcmp(thinwire_error_string(999), "unknown status code") == 0);

    /* a closed host refuses everything but destroy */
    check("close", thinwire_host_close(host), THINWIRE_STATUS_OK);
    check("close twice", thinwire_host_close(host), THINWIRE_STATUS_OK);
    check("send: closed host", thinwire_send(host, conn, 0, data, 4), THINWIRE_STATUS_HOST_CLOSED);
    check("service: closed host", thinwire_host_service(host, 0, &ev), THINWIRE_STATUS_HOST_CLOSED);
    check("connect: closed host", thinwire_connect(host, "127.0.0.1:9", kinds, 2, &conn), THINWIRE_STATUS_HOST_CLOSED);
    check("flush: closed host", thinwire_flush(host), THINWIRE_STATUS_HOST_CLOSED);
    thinwire_host_destroy(host);
    thinwire_host_destroy(NULL);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
