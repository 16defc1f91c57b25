/* thinwire echo server: sends every message back on the channel it came on.
 *
 *   echo_server [SECONDS]
 *
 * Binds 127.0.0.1 on a free port with a fresh key pair and prints "port N" as its first line
 * and "key HEX" (its public key, 64 hex digits, which clients need) as its second. Exits 0
 * after the first client disconnects, 1 on an error or when SECONDS (default 20) pass first. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "thinwire.h"

static int fail(const char *what, thinwire_status st) {
    fprintf(stderr, "echo_server: %s: %s\n", what, thinwire_error_string(st));
    return 1;
}

int main(int argc, char **argv) {
    int seconds = argc > 1 ? atoi(argv[1]) : 20;
    thinwire_config config = thinwire_config_default(true);
    thinwire_host *host = NULL;
    thinwire_status st = thinwire_host_create("127.0.0.1:0", &config, &host);
    if (st != THINWIRE_STATUS_OK) return fail("create", st);
    uint16_t port = 0;
    thinwire_host_port(host, &port);
    uint8_t key[32];
    char key_hex[65];
    st = thinwire_host_public_key(host, key);
    if (st == THINWIRE_STATUS_OK) st = thinwire_public_key_format(key, key_hex);
    if (st != THINWIRE_STATUS_OK) { thinwire_host_destroy(host); return fail("public key", st); }
    printf("port %u\nkey %s\n", (unsigned)port, key_hex);
    fflush(stdout);

    int code = 1;
    unsigned long echoed = 0;
    time_t end = time(NULL) + seconds;
    while (time(NULL) < end) {
        thinwire_event ev;
        st = thinwire_host_service(host, 50, &ev);
        if (st != THINWIRE_STATUS_OK) { code = fail("service", st); break; }
        if (ev.kind == THINWIRE_EVENT_TYPE_MESSAGE) {
            st = thinwire_send_with(host, ev.conn, ev.channel, thinwire_message_data(ev.message),
                                    thinwire_message_len(ev.message), NULL);
            thinwire_message_free(ev.message);
            if (st != THINWIRE_STATUS_OK) fprintf(stderr, "echo_server: send: %s\n", thinwire_error_string(st));
            else echoed++;
        } else if (ev.kind == THINWIRE_EVENT_TYPE_CONNECTED) {
            fprintf(stderr, "echo_server: connection %llu opened\n", (unsigned long long)ev.conn);
        } else if (ev.kind == THINWIRE_EVENT_TYPE_DISCONNECTED) {
            fprintf(stderr, "echo_server: connection %llu ended (reason %d), %lu messages echoed\n",
                    (unsigned long long)ev.conn, (int)ev.reason, echoed);
            code = 0;
            break;
        }
    }
    thinwire_host_destroy(host);
    return code;
}
