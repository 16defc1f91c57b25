/* ENet's counterpart of thinwire-proto's benches/hop.rs, for tools/hop-footprint.sh: one
 * 24-byte message from a client host to a server host and back, both hosts in one thread over
 * loopback, N times. ENet is not sans-IO, so its sockets stay in; under valgrind only the
 * user-space side of the system calls is counted.
 *
 *   cc -O2 -o enet_hop tools/enet_hop.c -lenet && ./enet_hop N [reliable|unreliable]
 */
#include <enet/enet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Services `host` until an event of type `type` comes (kept in `ev`). */
static void wait_event(ENetHost *host, ENetEvent *ev, ENetEventType type) {
    for (;;) {
        if (enet_host_service(host, ev, 5) > 0 && ev->type == type) {
            return;
        }
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    /* unsequenced: the unreliable packets of thinwire's bench */
    enet_uint32 flag = argc > 2 && strcmp(argv[2], "unreliable") == 0
                           ? ENET_PACKET_FLAG_UNSEQUENCED
                           : ENET_PACKET_FLAG_RELIABLE;
    if (enet_initialize() != 0) {
        return 1;
    }
    ENetAddress at;
    enet_address_set_host(&at, "127.0.0.1");
    at.port = 0;
    ENetHost *server = enet_host_create(&at, 8, 2, 0, 0);
    ENetHost *client = enet_host_create(NULL, 1, 2, 0, 0);
    if (server == NULL || client == NULL) {
        return 1;
    }
    ENetPeer *peer = enet_host_connect(client, &server->address, 2, 0);
    ENetEvent ev;
    int client_up = 0, server_up = 0;
    while (!(client_up && server_up)) {
        if (enet_host_service(client, &ev, 1) > 0 && ev.type == ENET_EVENT_TYPE_CONNECT) {
            client_up = 1;
        }
        if (enet_host_service(server, &ev, 1) > 0 && ev.type == ENET_EVENT_TYPE_CONNECT) {
            server_up = 1;
        }
    }
    char data[24];
    memset(data, 7, sizeof data);
    for (int i = 0; i < n; i++) {
        enet_peer_send(peer, 0, enet_packet_create(data, sizeof data, flag));
        enet_host_flush(client);
        wait_event(server, &ev, ENET_EVENT_TYPE_RECEIVE);
        enet_peer_send(ev.peer, 0, enet_packet_create(ev.packet->data, ev.packet->dataLength, flag));
        enet_packet_destroy(ev.packet);
        enet_host_flush(server);
        wait_event(client, &ev, ENET_EVENT_TYPE_RECEIVE);
        enet_packet_destroy(ev.packet);
    }
    printf("%d round trips\n", n);
    enet_host_destroy(client);
    enet_host_destroy(server);
    enet_deinitialize();
    return 0;
}
