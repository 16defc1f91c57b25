/* Prints the size of every struct of thinwire.h and the offset of every field, one per line
 * ("thinwire_config 120", "thinwire_config.server 0"), for ThinwireTests.cs to compare with
 * the C# declarations' marshalled layout. */
#include <stddef.h>
#include <stdio.h>

#include "thinwire.h"

#define SIZE(t) printf(#t " %zu\n", sizeof(t))
#define FIELD(t, f) printf(#t "." #f " %zu\n", offsetof(t, f))

int main(void) {
    SIZE(thinwire_config);
    FIELD(thinwire_config, server);
    FIELD(thinwire_config, max_connections);
    FIELD(thinwire_config, max_connections_per_source);
    FIELD(thinwire_config, handshakes_per_second_per_source);
    FIELD(thinwire_config, server_secret_key);
    FIELD(thinwire_config, has_server_secret_key);
    FIELD(thinwire_config, insecure_cleartext);
    FIELD(thinwire_config, fault_drop_rate);
    FIELD(thinwire_config, fault_delay_ms);
    FIELD(thinwire_config, fault_jitter_ms);
    FIELD(thinwire_config, fault_seed);
    FIELD(thinwire_config, token_key);
    FIELD(thinwire_config, has_token_key);
    FIELD(thinwire_config, tick_ack_period_us);

    SIZE(thinwire_event);
    FIELD(thinwire_event, kind);
    FIELD(thinwire_event, conn);
    FIELD(thinwire_event, incoming);
    FIELD(thinwire_event, channel);
    FIELD(thinwire_event, message);
    FIELD(thinwire_event, has_deadline);
    FIELD(thinwire_event, deadline_late);
    FIELD(thinwire_event, deadline_age_ms);
    FIELD(thinwire_event, reason);
    FIELD(thinwire_event, close_code);
    FIELD(thinwire_event, refuse_reason);

    SIZE(thinwire_connection_stats);
    FIELD(thinwire_connection_stats, srtt_us);
    FIELD(thinwire_connection_stats, rttvar_us);
    FIELD(thinwire_connection_stats, rto_us);
    FIELD(thinwire_connection_stats, loss_estimate);
    FIELD(thinwire_connection_stats, packets_sent);
    FIELD(thinwire_connection_stats, bytes_sent);
    FIELD(thinwire_connection_stats, packets_received);
    FIELD(thinwire_connection_stats, bytes_received);
    FIELD(thinwire_connection_stats, packets_lost);
    FIELD(thinwire_connection_stats, frames_retransmitted);
    FIELD(thinwire_connection_stats, messages_delivered);

    SIZE(thinwire_deadline);
    FIELD(thinwire_deadline, deadline_ms);
    FIELD(thinwire_deadline, target);

    SIZE(thinwire_send_options);
    FIELD(thinwire_send_options, mode);
    FIELD(thinwire_send_options, latest_key);
    FIELD(thinwire_send_options, deadline);

    SIZE(thinwire_token_params);
    FIELD(thinwire_token_params, key);
    FIELD(thinwire_token_params, client_id);
    FIELD(thinwire_token_params, user_data);
    FIELD(thinwire_token_params, user_data_len);
    FIELD(thinwire_token_params, server_key);
    FIELD(thinwire_token_params, server_address);
    FIELD(thinwire_token_params, expires_unix_s);
    FIELD(thinwire_token_params, nonce);
    FIELD(thinwire_token_params, server_addresses);
    FIELD(thinwire_token_params, server_address_count);
    return 0;
}
