/* Every error path of the C API, checked: null pointers, bad arguments, bad keys, a bad
 * channel, an oversized message, an unknown connection, a refused connection, a closed host.
 * Prints "N passed, M failed" and exits 0 only if every check passed. Needs no other process:
 * the refusal comes from a server host in this one, over loopback. */
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

    /* keys: a server's public key, fixed by its secret; parsing and formatting hex */
    uint8_t key[32], key2[32], parsed[32];
    char hex[65];
    thinwire_config server_config = thinwire_config_default(true);
    server_config.has_server_secret_key = true;
    memset(server_config.server_secret_key, 7, sizeof server_config.server_secret_key);
    thinwire_host *server = NULL, *server2 = NULL;
    check("create server", thinwire_host_create("127.0.0.1:0", &server_config, &server), THINWIRE_STATUS_OK);
    check("create server, same secret", thinwire_host_create("127.0.0.1:0", &server_config, &server2), THINWIRE_STATUS_OK);
    check("public key: null host", thinwire_host_public_key(NULL, key), THINWIRE_STATUS_NULL_POINTER);
    check("public key: null out", thinwire_host_public_key(server, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("public key: client host", thinwire_host_public_key(host, key), THINWIRE_STATUS_NOT_SERVER);
    check("public key", thinwire_host_public_key(server, key), THINWIRE_STATUS_OK);
    check("public key, same secret", thinwire_host_public_key(server2, key2), THINWIRE_STATUS_OK);
    check_true("public key: same secret, same key", memcmp(key, key2, 32) == 0);
    thinwire_host_destroy(server2);
    server_config.server_secret_key[1] ^= 1; /* not byte 0: X25519 clears its low 3 bits */
    check("create server, other secret", thinwire_host_create("127.0.0.1:0", &server_config, &server2), THINWIRE_STATUS_OK);
    check("public key, other secret", thinwire_host_public_key(server2, key2), THINWIRE_STATUS_OK);
    check_true("public key: other secret, other key", memcmp(key, key2, 32) != 0);
    thinwire_host_destroy(server2);
    check("format: null key", thinwire_public_key_format(NULL, hex), THINWIRE_STATUS_NULL_POINTER);
    check("format: null out", thinwire_public_key_format(key, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("format", thinwire_public_key_format(key, hex), THINWIRE_STATUS_OK);
    check_true("format: 64 digits", strlen(hex) == 64);
    check("parse: null text", thinwire_public_key_parse(NULL, parsed), THINWIRE_STATUS_NULL_POINTER);
    check("parse: null out", thinwire_public_key_parse(hex, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("parse: not hex", thinwire_public_key_parse("not a key", parsed), THINWIRE_STATUS_INVALID_ARGUMENT);
    char short_hex[65];
    memcpy(short_hex, hex, 63);
    short_hex[63] = '\0';
    check("parse: 63 digits", thinwire_public_key_parse(short_hex, parsed), THINWIRE_STATUS_INVALID_ARGUMENT);
    char bad_digit[65];
    memcpy(bad_digit, hex, 65);
    bad_digit[10] = 'g';
    check("parse: a non-hex digit", thinwire_public_key_parse(bad_digit, parsed), THINWIRE_STATUS_INVALID_ARGUMENT);
    check("parse", thinwire_public_key_parse(hex, parsed), THINWIRE_STATUS_OK);
    check_true("parse: round trip", memcmp(parsed, key, 32) == 0);

    /* connecting */
    uint32_t kinds[] = {THINWIRE_CHANNEL_KIND_UNRELIABLE, THINWIRE_CHANNEL_KIND_RELIABLE_ORDERED};
    uint32_t bad_kind[] = {99};
    uint64_t conn = 0;
    check("connect: null host", thinwire_connect(NULL, "127.0.0.1:9", key, kinds, 2, &conn), THINWIRE_STATUS_NULL_POINTER);
    check("connect: null address", thinwire_connect(host, NULL, key, kinds, 2, &conn), THINWIRE_STATUS_NULL_POINTER);
    check("connect: null key", thinwire_connect(host, "127.0.0.1:9", NULL, kinds, 2, &conn), THINWIRE_STATUS_NULL_POINTER);
    check("connect: null channels", thinwire_connect(host, "127.0.0.1:9", key, NULL, 2, &conn), THINWIRE_STATUS_NULL_POINTER);
    check("connect: null out", thinwire_connect(host, "127.0.0.1:9", key, kinds, 2, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("connect: bad kind", thinwire_connect(host, "127.0.0.1:9", key, bad_kind, 1, &conn), THINWIRE_STATUS_INVALID_ARGUMENT);
    check("connect: no channels", thinwire_connect(host, "127.0.0.1:9", key, kinds, 0, &conn), THINWIRE_STATUS_INVALID_ARGUMENT);
    check("connect", thinwire_connect(host, "127.0.0.1:9", key, kinds, 2, &conn), THINWIRE_STATUS_OK);

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

    /* a refusal: a cleartext client and an encrypting server share no cipher suite */
    thinwire_config cleartext = thinwire_config_default(false);
    cleartext.insecure_cleartext = true;
    thinwire_host *plain = NULL;
    check("create cleartext client", thinwire_host_create("127.0.0.1:0", &cleartext, &plain), THINWIRE_STATUS_OK);
    uint16_t server_port = 0;
    thinwire_host_port(server, &server_port);
    char server_addr[32];
    snprintf(server_addr, sizeof server_addr, "127.0.0.1:%u", (unsigned)server_port);
    uint64_t refused = 0;
    check("connect cleartext", thinwire_connect(plain, server_addr, key, kinds, 2, &refused), THINWIRE_STATUS_OK);
    thinwire_event got = {0};
    for (int i = 0; i < 200 && got.kind != THINWIRE_EVENT_TYPE_DISCONNECTED; i++) {
        thinwire_event server_ev;
        thinwire_host_service(server, 5, &server_ev);
        if (server_ev.kind == THINWIRE_EVENT_TYPE_MESSAGE) thinwire_message_free(server_ev.message);
        thinwire_host_service(plain, 5, &got);
        if (got.kind == THINWIRE_EVENT_TYPE_MESSAGE) thinwire_message_free(got.message);
    }
    check_true("refused: disconnected", got.kind == THINWIRE_EVENT_TYPE_DISCONNECTED && got.conn == refused);
    check_true("refused: reason", got.reason == THINWIRE_DISCONNECT_REASON_REFUSED);
    check_true("refused: no common cipher suite", got.refuse_reason == THINWIRE_REFUSE_REASON_NO_COMMON_CIPHER_SUITE);
    thinwire_host_destroy(plain);
    thinwire_host_destroy(server);

    /* messages: null handles are harmless */
    check_true("message data: null", thinwire_message_data(NULL) == NULL);
    check_true("message len: null", thinwire_message_len(NULL) == 0);
    thinwire_message_free(NULL);

    /* error strings: every code has one, unknown codes too */
    for (int code = 0; code <= 16; code++) {
        const char *s = thinwire_error_string((thinwire_status)code);
        check_true("error string", s != NULL && strlen(s) > 0 && strcmp(s, "unknown status code") != 0);
    }
    check_true("error string: unknown", strcmp(thinwire_error_string(999), "unknown status code") == 0);

    /* a closed host refuses everything but destroy */
    check("close", thinwire_host_close(host), THINWIRE_STATUS_OK);
    check("close twice", thinwire_host_close(host), THINWIRE_STATUS_OK);
    check("send: closed host", thinwire_send(host, conn, 0, data, 4), THINWIRE_STATUS_HOST_CLOSED);
    check("service: closed host", thinwire_host_service(host, 0, &ev), THINWIRE_STATUS_HOST_CLOSED);
    check("connect: closed host", thinwire_connect(host, "127.0.0.1:9", key, kinds, 2, &conn), THINWIRE_STATUS_HOST_CLOSED);
    check("public key: closed host", thinwire_host_public_key(host, key), THINWIRE_STATUS_HOST_CLOSED);
    check("flush: closed host", thinwire_flush(host), THINWIRE_STATUS_HOST_CLOSED);
    thinwire_host_destroy(host);
    thinwire_host_destroy(NULL);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
