/* Every error path of the C API, checked: null pointers, bad arguments, bad keys, a bad
 * channel, an oversized message, an unknown connection, a refused connection, bad and
 * foreign connect tokens, too-small buffers, claims of a connection without a token, a closed
 * host; and one connection by connect token, whose claims the server reads. Prints
 * "N passed, M failed" and exits 0 only if every check passed. Needs no other process: the
 * servers are hosts in this one, over loopback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    bad = config;
    bad.has_token_key = true; /* a token key is a server's */
    check("create: client with a token key", thinwire_host_create("127.0.0.1:0", &bad, &host), THINWIRE_STATUS_INVALID_ARGUMENT);
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

    /* sending (queued: the handshake has not completed); null options are a plain send */
    thinwire_send_options zeroed = {0};
    check("send: null host", thinwire_send_with(NULL, conn, 0, data, 4, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("send: null data", thinwire_send_with(host, conn, 0, NULL, 4, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("send: empty", thinwire_send_with(host, conn, 1, NULL, 0, NULL), THINWIRE_STATUS_OK);
    check("send: zeroed options", thinwire_send_with(host, conn, 1, data, 4, &zeroed), THINWIRE_STATUS_OK);
    check("send: bad channel", thinwire_send_with(host, conn, 5, data, 4, NULL), THINWIRE_STATUS_UNKNOWN_CHANNEL);
    check("send: unknown connection", thinwire_send_with(host, conn + 1000, 0, data, 4, NULL), THINWIRE_STATUS_UNKNOWN_CONNECTION);
    size_t big_len = 1 << 20;
    uint8_t *big = calloc(big_len, 1);
    check("send: oversized unreliable", thinwire_send_with(host, conn, 0, big, big_len, NULL), THINWIRE_STATUS_MESSAGE_TOO_LARGE);
    free(big);
    thinwire_send_options bad_mode = {.mode = 99};
    check("send: bad mode", thinwire_send_with(host, conn, 1, data, 4, &bad_mode), THINWIRE_STATUS_INVALID_ARGUMENT);
    thinwire_send_options latest = {.mode = THINWIRE_SEND_MODE_LATEST, .latest_key = 7};
    check("send latest: wrong class", thinwire_send_with(host, conn, 1, data, 4, &latest), THINWIRE_STATUS_WRONG_CHANNEL_KIND);
    thinwire_send_options deadline = {.mode = THINWIRE_SEND_MODE_DEADLINE, .deadline = {500, 1.5}};
    check("send deadline: bad target", thinwire_send_with(host, conn, 1, data, 4, &deadline), THINWIRE_STATUS_INVALID_DEADLINE);
    deadline.deadline.target = 0.999;
    check("send deadline", thinwire_send_with(host, conn, 1, data, 4, &deadline), THINWIRE_STATUS_OK);

    /* the deprecated send functions, kept one release: the same checks through them */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    check("old send: null host", thinwire_send(NULL, conn, 0, data, 4), THINWIRE_STATUS_NULL_POINTER);
    check("old send", thinwire_send(host, conn, 1, data, 4), THINWIRE_STATUS_OK);
    check("old send_latest: wrong class", thinwire_send_latest(host, conn, 1, 7, data, 4), THINWIRE_STATUS_WRONG_CHANNEL_KIND);
    thinwire_deadline old_deadline = {500, 1.5};
    check("old send_deadline: bad target", thinwire_send_deadline(host, conn, 1, data, 4, &old_deadline), THINWIRE_STATUS_INVALID_DEADLINE);
    check("old send_deadline: null deadline", thinwire_send_deadline(host, conn, 1, data, 4, NULL), THINWIRE_STATUS_NULL_POINTER);
    old_deadline.target = 0.999;
    check("old send_deadline", thinwire_send_deadline(host, conn, 1, data, 4, &old_deadline), THINWIRE_STATUS_OK);
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

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

    /* connect tokens: a server that requires them, minting, bad tokens */
    thinwire_config token_config = thinwire_config_default(true);
    token_config.has_token_key = true;
    memset(token_config.token_key, 9, sizeof token_config.token_key);
    thinwire_host *tserver = NULL, *tclient = NULL;
    check("create token server", thinwire_host_create("127.0.0.1:0", &token_config, &tserver), THINWIRE_STATUS_OK);
    check("create token client", thinwire_host_create("127.0.0.1:0", NULL, &tclient), THINWIRE_STATUS_OK);
    uint8_t tkey[32];
    check("token server: public key", thinwire_host_public_key(tserver, tkey), THINWIRE_STATUS_OK);
    uint16_t tport = 0;
    check("token server: port", thinwire_host_port(tserver, &tport), THINWIRE_STATUS_OK);
    char taddr[32];
    snprintf(taddr, sizeof taddr, "127.0.0.1:%u", (unsigned)tport);
    const uint8_t *secret = token_config.token_key;
    uint8_t nonce[24]; /* a real backend draws it from a cryptographic random source */
    memset(nonce, 3, sizeof nonce);
    const uint8_t team[] = "team blue";
    size_t team_len = sizeof team - 1;
    uint64_t expires = (uint64_t)time(NULL) + 30;
    uint8_t token[THINWIRE_TOKEN_MAX_LEN];
    size_t token_len = sizeof token;
    const thinwire_token_params params = {
        .key = secret,
        .client_id = 42,
        .user_data = team,
        .user_data_len = team_len,
        .server_key = tkey,
        .server_address = taddr,
        .expires_unix_s = expires,
        .nonce = nonce,
    };
    thinwire_token_params p = params;
    check("mint: null params", thinwire_token_mint(NULL, token, &token_len), THINWIRE_STATUS_NULL_POINTER);
    p = params; p.key = NULL;
    check("mint: null key", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_NULL_POINTER);
    p = params; p.server_key = NULL;
    check("mint: null server key", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_NULL_POINTER);
    p = params; p.nonce = NULL;
    check("mint: null nonce", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_NULL_POINTER);
    p = params; p.server_address = NULL;
    check("mint: null address", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_NULL_POINTER);
    p = params; p.user_data = NULL;
    check("mint: null user data", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_NULL_POINTER);
    check("mint: null length", thinwire_token_mint(&params, token, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("mint: null out", thinwire_token_mint(&params, NULL, &token_len), THINWIRE_STATUS_NULL_POINTER);
    p = params; p.server_address = "nowhere";
    check("mint: not an address", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_INVALID_ARGUMENT);
    /* several addresses: the client goes to the first (here the server), the others are
     * the server's further addresses (another site, IPv6, ...) */
    const char *two[] = {taddr, "[2001:db8::5]:7777"};
    p = params; p.server_addresses = two; p.server_address_count = 2;
    check("mint: an address and a list", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_INVALID_ARGUMENT);
    p = params; p.server_address = NULL; p.server_address_count = 2;
    check("mint: null address list", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_NULL_POINTER);
    p = params; p.server_address = NULL; p.server_addresses = two; p.server_address_count = THINWIRE_TOKEN_MAX_ADDRESSES + 1;
    check("mint: too many addresses", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_INVALID_ARGUMENT);
    uint8_t too_much[THINWIRE_TOKEN_MAX_USER_DATA + 1] = {0};
    p = params; p.user_data = too_much; p.user_data_len = sizeof too_much;
    check("mint: user data too large", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_INVALID_ARGUMENT);
    check_true("mint: length untouched by errors", token_len == sizeof token);
    size_t need = 0;
    check("mint: asking the length", thinwire_token_mint(&params, NULL, &need), THINWIRE_STATUS_BUFFER_TOO_SMALL);
    check_true("mint: length needed", need > 0 && need <= THINWIRE_TOKEN_MAX_LEN);
    uint8_t small[16];
    size_t small_len = sizeof small;
    check("mint: buffer too small", thinwire_token_mint(&params, small, &small_len), THINWIRE_STATUS_BUFFER_TOO_SMALL);
    check_true("mint: too small, length needed", small_len == need);
    check("mint", thinwire_token_mint(&params, token, &token_len), THINWIRE_STATUS_OK);
    check_true("mint: length", token_len == need);
    /* the client connects below with a token for two addresses */
    p = params; p.server_address = NULL; p.server_addresses = two; p.server_address_count = 2;
    token_len = sizeof token;
    check("mint: two addresses", thinwire_token_mint(&p, token, &token_len), THINWIRE_STATUS_OK);
    check_true("mint: two addresses, a longer token", token_len > need);
    /* the same claims under another backend's key: the server refuses it */
    uint8_t other_secret[32], foreign[THINWIRE_TOKEN_MAX_LEN];
    memset(other_secret, 8, sizeof other_secret);
    size_t foreign_len = sizeof foreign;
    p = params; p.key = other_secret;
    check("mint: another key", thinwire_token_mint(&p, foreign, &foreign_len), THINWIRE_STATUS_OK);

    uint64_t tconn = 0;
    const uint8_t not_a_token[] = "not a token";
    check("connect token: null host", thinwire_connect_with_token(NULL, token, token_len, kinds, 2, &tconn), THINWIRE_STATUS_NULL_POINTER);
    check("connect token: null token", thinwire_connect_with_token(tclient, NULL, token_len, kinds, 2, &tconn), THINWIRE_STATUS_NULL_POINTER);
    check("connect token: null channels", thinwire_connect_with_token(tclient, token, token_len, NULL, 2, &tconn), THINWIRE_STATUS_NULL_POINTER);
    check("connect token: null out", thinwire_connect_with_token(tclient, token, token_len, kinds, 2, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("connect token: not a token", thinwire_connect_with_token(tclient, not_a_token, sizeof not_a_token, kinds, 2, &tconn), THINWIRE_STATUS_BAD_TOKEN);
    check("connect token: truncated", thinwire_connect_with_token(tclient, token, token_len - 1, kinds, 2, &tconn), THINWIRE_STATUS_BAD_TOKEN);
    check("connect token: empty", thinwire_connect_with_token(tclient, token, 0, kinds, 2, &tconn), THINWIRE_STATUS_BAD_TOKEN);
    check("connect token: bad kind", thinwire_connect_with_token(tclient, token, token_len, bad_kind, 1, &tconn), THINWIRE_STATUS_INVALID_ARGUMENT);
    check("connect token: no channels", thinwire_connect_with_token(tclient, token, token_len, kinds, 0, &tconn), THINWIRE_STATUS_INVALID_ARGUMENT);

    /* one connection by token (admitted), one with a foreign token and one without a token
     * (both refused), serviced until all three are settled */
    uint64_t fconn = 0, nconn = 0;
    check("connect token", thinwire_connect_with_token(tclient, token, token_len, kinds, 2, &tconn), THINWIRE_STATUS_OK);
    check("connect token: foreign", thinwire_connect_with_token(tclient, foreign, foreign_len, kinds, 2, &fconn), THINWIRE_STATUS_OK);
    check("connect without a token", thinwire_connect(tclient, taddr, tkey, kinds, 2, &nconn), THINWIRE_STATUS_OK);
    int client_connected = 0, refused_foreign = 0, refused_tokenless = 0;
    uint64_t sconn = 0;
    int server_connected = 0;
    for (int i = 0; i < 400 && !(client_connected && server_connected && refused_foreign && refused_tokenless); i++) {
        thinwire_event sev, cev;
        thinwire_host_service(tserver, 5, &sev);
        if (sev.kind == THINWIRE_EVENT_TYPE_MESSAGE) thinwire_message_free(sev.message);
        if (sev.kind == THINWIRE_EVENT_TYPE_CONNECTED && sev.incoming) {
            server_connected++;
            sconn = sev.conn;
        }
        thinwire_host_service(tclient, 5, &cev);
        if (cev.kind == THINWIRE_EVENT_TYPE_MESSAGE) thinwire_message_free(cev.message);
        if (cev.kind == THINWIRE_EVENT_TYPE_CONNECTED && cev.conn == tconn) client_connected = 1;
        if (cev.kind == THINWIRE_EVENT_TYPE_DISCONNECTED) {
            int invalid = cev.reason == THINWIRE_DISCONNECT_REASON_REFUSED &&
                          cev.refuse_reason == THINWIRE_REFUSE_REASON_INVALID_TOKEN;
            if (cev.conn == fconn) refused_foreign = invalid ? 1 : -1;
            else if (cev.conn == nconn) refused_tokenless = invalid ? 1 : -1;
            else if (cev.conn == tconn) client_connected = -1;
        }
    }
    check_true("token: client connected", client_connected == 1);
    check_true("token: server connected once", server_connected == 1);
    check_true("token: foreign token refused (invalid token)", refused_foreign == 1);
    check_true("token: no token refused (invalid token)", refused_tokenless == 1);

    /* the claims, on the server */
    uint64_t client_id = 0;
    uint8_t user_data[THINWIRE_TOKEN_MAX_USER_DATA];
    size_t user_len = sizeof user_data;
    check("claims: null host", thinwire_connection_token_claims(NULL, sconn, &client_id, user_data, &user_len), THINWIRE_STATUS_NULL_POINTER);
    check("claims: null client id", thinwire_connection_token_claims(tserver, sconn, NULL, user_data, &user_len), THINWIRE_STATUS_NULL_POINTER);
    check("claims: null length", thinwire_connection_token_claims(tserver, sconn, &client_id, user_data, NULL), THINWIRE_STATUS_NULL_POINTER);
    check("claims: null user data", thinwire_connection_token_claims(tserver, sconn, &client_id, NULL, &user_len), THINWIRE_STATUS_NULL_POINTER);
    check("claims: unknown connection", thinwire_connection_token_claims(tserver, sconn + 1000, &client_id, user_data, &user_len), THINWIRE_STATUS_UNKNOWN_CONNECTION);
    check("claims: outgoing connection", thinwire_connection_token_claims(tclient, tconn, &client_id, user_data, &user_len), THINWIRE_STATUS_NO_CLAIMS);
    check("claims: connection without a token", thinwire_connection_token_claims(host, conn, &client_id, user_data, &user_len), THINWIRE_STATUS_NO_CLAIMS);
    check_true("claims: nothing written by errors", client_id == 0 && user_len == sizeof user_data);
    size_t tiny_len = 4;
    check("claims: buffer too small", thinwire_connection_token_claims(tserver, sconn, &client_id, user_data, &tiny_len), THINWIRE_STATUS_BUFFER_TOO_SMALL);
    check_true("claims: too small, length needed", tiny_len == team_len);
    check_true("claims: too small, no client id", client_id == 0);
    size_t ask_len = 0;
    check("claims: asking the length", thinwire_connection_token_claims(tserver, sconn, &client_id, NULL, &ask_len), THINWIRE_STATUS_BUFFER_TOO_SMALL);
    check_true("claims: length asked", ask_len == team_len);
    check("claims", thinwire_connection_token_claims(tserver, sconn, &client_id, user_data, &user_len), THINWIRE_STATUS_OK);
    check_true("claims: client id", client_id == 42);
    check_true("claims: user data", user_len == team_len && memcmp(user_data, team, team_len) == 0);
    thinwire_host_destroy(tclient);
    thinwire_host_destroy(tserver);

    /* messages: null handles are harmless */
    check_true("message data: null", thinwire_message_data(NULL) == NULL);
    check_true("message len: null", thinwire_message_len(NULL) == 0);
    thinwire_message_free(NULL);

    /* error strings: every code has one, unknown codes too */
    for (int code = 0; code <= 19; code++) {
        const char *s = thinwire_error_string((thinwire_status)code);
        check_true("error string", s != NULL && strlen(s) > 0 && strcmp(s, "unknown status code") != 0);
    }
    check_true("error string: unknown", strcmp(thinwire_error_string(999), "unknown status code") == 0);

    /* a closed host refuses everything but destroy */
    check("close", thinwire_host_close(host), THINWIRE_STATUS_OK);
    check("close twice", thinwire_host_close(host), THINWIRE_STATUS_OK);
    check("send: closed host", thinwire_send_with(host, conn, 0, data, 4, NULL), THINWIRE_STATUS_HOST_CLOSED);
    check("service: closed host", thinwire_host_service(host, 0, &ev), THINWIRE_STATUS_HOST_CLOSED);
    check("connect: closed host", thinwire_connect(host, "127.0.0.1:9", key, kinds, 2, &conn), THINWIRE_STATUS_HOST_CLOSED);
    check("public key: closed host", thinwire_host_public_key(host, key), THINWIRE_STATUS_HOST_CLOSED);
    check("flush: closed host", thinwire_flush(host), THINWIRE_STATUS_HOST_CLOSED);
    check("connect token: closed host", thinwire_connect_with_token(host, token, token_len, kinds, 2, &conn), THINWIRE_STATUS_HOST_CLOSED);
    check("claims: closed host", thinwire_connection_token_claims(host, conn, &client_id, user_data, &user_len), THINWIRE_STATUS_HOST_CLOSED);
    thinwire_host_destroy(host);
    thinwire_host_destroy(NULL);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
