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

/* Services `host` until an event of type `type` comes (kept in `ev`); exits the program on
 * a disconnect, an error, or after about 5 s without it. */
static void wait_event(ENetHost *host, ENetEvent *ev, ENetEventType type) {
    for (int tries = 0; tries < 1000; tries++) {
        int got = enet_host_service(host, ev, 5);
        if (got < 0 || (got > 0 && ev->type == ENET_EVENT_TYPE_DISCONNECT)) {
            fprintf(stderr, "enet_hop: the connection failed\n");
            exit(1);
        }
        if (got > 0 && ev->type == type) {
            return;
        }
    }
    fprintf(stderr, "enet_hop: no event in 5 s\n");
    exit(1);
}

/* Queues a copy of `len` bytes at `data` on channel 0 of `peer`, or exits. */
static void send_copy(ENetPeer *peer, const void *data, size_t len, enet_uint32 flag) {
    ENetPacket *packet = enet_packet_create(data, len, flag);
    if (packet == NULL || enet_peer_send(peer, 0, packet) != 0) {
        fprintf(stderr, "enet_hop: send failed\n");
        exit(1);
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    /* unsequenced: the unreliable packets of thinwire's bench */
    enet_uint32 flag = argc > 2 && strcmp(argv[2], "unreliable") == 0
                           ? ENET_PACKET_FLAG_UNSEQUENCED
                           : ENET_PACKET_FLAG_RELIABLE;
    if (enet_initialize() != 0) {
        fprintf(stderr, "enet_hop: enet_initialize failed\n");
        return 1;
    }
    ENetAddress at;
    enet_address_set_host(&at, "127.0.0.1");
    at.port = 0;
    ENetHost *server = enet_host_create(&at, 8, 2, 0, 0);
    ENetHost *client = enet_host_create(NULL, 1, 2, 0, 0);
    if (server == NULL || client == NULL) {
        fprintf(stderr, "enet_hop: no host\n");
        return 1;
    }
    ENetPeer *peer = enet_host_connect(client, &server->address, 2, 0);
    if (peer == NULL) {
        fprintf(stderr, "enet_hop: no peer\n");
        return 1;
    }
    ENetEvent ev;
    int client_up = 0, server_up = 0;
    for (int tries = 0; !(client_up && server_up); tries++) {
        /* each try services both hosts for up to 1 ms each */
        if (tries == 2500) {
            fprintf(stderr, "enet_hop: no connection in 5 s\n");
            return 1;
        }
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
        send_copy(peer, data, sizeof data, flag);
        enet_host_flush(client);
        wait_event(server, &ev, ENET_EVENT_TYPE_RECEIVE);
        send_copy(ev.peer, ev.packet->data, ev.packet->dataLength, flag);
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
