// P/Invoke declarations of thinwire's whole C API (crates/thinwire-ffi/include/thinwire.h), in
// the header's order: enums, structs, functions (the two constants sit in Native). Functions,
// structs and fields keep their C names; an enum value is its C name without the enum's prefix,
// in PascalCase (THINWIRE_STATUS_BUFFER_FULL is Status.BufferFull). So a change to the header
// maps line by line onto this file. The header's comments are the reference; the comments here
// are short.
//
// Layout: every struct is [StructLayout(LayoutKind.Sequential)] with C `bool` marshalled as one
// byte (UnmanagedType.U1), fixed arrays as ByValArray, pointers as IntPtr and size_t as UIntPtr.
// tests/layout.c prints the C sizes and offsets; tests/ThinwireTests.cs compares them with
// Marshal.SizeOf and Marshal.OffsetOf. The two pointers the C API lets be null for a default
// (thinwire_host_create's config, thinwire_send_with's opts) are declared `ref`: pass
// thinwire_config_default(false) or zeroed options (plain) instead.
//
// No callbacks cross the boundary (the host is polled), so nothing here needs reverse P/Invoke
// and the file works under Mono, .NET and IL2CPP (AOT) alike.

using System;
using System.Runtime.InteropServices;

namespace Thinwire
{
    /// <summary>What every call returns (<c>thinwire_status</c>): <see cref="Ok"/>, or who is at
    /// fault and why. <see cref="Native.ErrorString"/> describes each.</summary>
    public enum Status : int
    {
        /// <summary>Success.</summary>
        Ok = 0,
        /// <summary>The caller passed a null pointer where an object was required.</summary>
        NullPointer = 1,
        /// <summary>An argument out of range (a bad enum value, an empty channel list, an unparsable string).</summary>
        InvalidArgument = 2,
        /// <summary>The host was closed; only destroying it is left.</summary>
        HostClosed = 3,
        /// <summary>No connection with this id.</summary>
        UnknownConnection = 4,
        /// <summary>The channel number is not one of the connection's channels.</summary>
        UnknownChannel = 5,
        /// <summary>The send mode does not fit the channel's class.</summary>
        WrongChannelKind = 6,
        /// <summary>The message is larger than the channel's class allows.</summary>
        MessageTooLarge = 7,
        /// <summary>The connection's send buffer is full.</summary>
        BufferFull = 8,
        /// <summary>The connection is closing or closed.</summary>
        ConnectionClosed = 9,
        /// <summary>A deadline of zero or a target outside (0, 1).</summary>
        InvalidDeadline = 10,
        /// <summary>A latest-value key above 2^62 - 1.</summary>
        KeyOutOfRange = 11,
        /// <summary>The configuration was refused.</summary>
        Config = 12,
        /// <summary>The operating system refused a socket call.</summary>
        Io = 13,
        /// <summary>No connection id was free.</summary>
        NoConnectionId = 14,
        /// <summary>A bug inside thinwire was caught at the boundary.</summary>
        Panic = 15,
        /// <summary>The call needs a server host.</summary>
        NotServer = 16,
        /// <summary>The connect token's bytes do not decode.</summary>
        BadToken = 17,
        /// <summary>The connection has no connect-token claims.</summary>
        NoClaims = 18,
        /// <summary>The caller's output buffer is too small; the length needed was written back.</summary>
        BufferTooSmall = 19,
    }

    /// <summary>What <c>thinwire_host_service</c> found (<c>thinwire_event_type</c>).</summary>
    public enum EventType : int
    {
        /// <summary>Nothing happened before the timeout.</summary>
        None = 0,
        /// <summary>A connection completed its handshake.</summary>
        Connected = 1,
        /// <summary>A message arrived (free it with <c>thinwire_message_free</c>).</summary>
        Message = 2,
        /// <summary>A connection ended; its id is no longer valid.</summary>
        Disconnected = 3,
    }

    /// <summary>Why a connection ended (<c>thinwire_disconnect_reason</c>).</summary>
    public enum DisconnectReason : int
    {
        /// <summary>Not a disconnect event.</summary>
        None = 0,
        /// <summary>This side closed it.</summary>
        LocallyClosed = 1,
        /// <summary>The peer closed it, with a close code.</summary>
        ClosedByPeer = 2,
        /// <summary>Nothing arrived for the idle timeout.</summary>
        TimedOut = 3,
        /// <summary>The handshake did not complete in time.</summary>
        HandshakeTimedOut = 4,
        /// <summary>The peer no longer knew the connection (it restarted).</summary>
        PeerReset = 5,
        /// <summary>The peer broke the protocol or speaks another version.</summary>
        PeerError = 6,
        /// <summary>The server refused the connection (see <see cref="RefuseReason"/>).</summary>
        Refused = 7,
    }

    /// <summary>Why a server refused a connection (<c>thinwire_refuse_reason</c>).</summary>
    public enum RefuseReason : int
    {
        /// <summary>Not a refusal.</summary>
        None = 0,
        /// <summary>The server holds its most connections.</summary>
        ServerFull = 1,
        /// <summary>The server holds its most connections from this client's address.</summary>
        TooManyFromSource = 2,
        /// <summary>The connect token was missing, forged, expired or for another server.</summary>
        InvalidToken = 3,
        /// <summary>A connection with the token's client id is open already.</summary>
        AlreadyConnected = 4,
        /// <summary>The two ends share no cipher suite.</summary>
        NoCommonCipherSuite = 5,
        /// <summary>The server is nearly full and this client's network holds more connections than most.</summary>
        BusyNetwork = 6,
        /// <summary>The server does not hold the secret half of the key the client connected with.</summary>
        UnknownServerKey = 7,
        /// <summary>A reason this version does not know.</summary>
        Other = 255,
    }

    /// <summary>The delivery class of a channel (<c>thinwire_channel_kind</c>).</summary>
    public enum ChannelKind : uint
    {
        /// <summary>Every message, in send order.</summary>
        ReliableOrdered = 0,
        /// <summary>Every message, as soon as it arrives.</summary>
        ReliableUnordered = 1,
        /// <summary>At most once, no retransmission.</summary>
        Unreliable = 2,
        /// <summary>At most once, never older than what was delivered.</summary>
        UnreliableSequenced = 3,
        /// <summary>The newest value per key, reliably; superseded values are not retransmitted.</summary>
        LatestReliable = 4,
    }

    /// <summary>How <c>thinwire_send_with</c> delivers a message (<c>thinwire_send_mode</c>).</summary>
    public enum SendMode : uint
    {
        /// <summary>As the channel's class says (any class but latest-value).</summary>
        Plain = 0,
        /// <summary>The newest value for a key, on a latest-value channel only.</summary>
        Latest = 1,
        /// <summary>A deadline message, on a channel of any class.</summary>
        Deadline = 2,
    }

    /// <summary>The C functions and structs of thinwire.h, unchanged.</summary>
    public static class Native
    {
        /// <summary>The native library's name: <c>libthinwire.so</c>, <c>libthinwire.dylib</c>,
        /// <c>thinwire.dll</c>; on iOS the library is linked statically into the player.</summary>
#if UNITY_IOS && !UNITY_EDITOR
        public const string Library = "__Internal";
#else
        public const string Library = "thinwire";
#endif

        /// <summary><c>THINWIRE_TOKEN_MAX_LEN</c>: a buffer this large holds any connect token.</summary>
        public const int THINWIRE_TOKEN_MAX_LEN = 507;

        /// <summary><c>THINWIRE_TOKEN_MAX_ADDRESSES</c>: the most server addresses one connect token holds.</summary>
        public const int THINWIRE_TOKEN_MAX_ADDRESSES = 8;

        /// <summary><c>THINWIRE_TOKEN_MAX_USER_DATA</c>: a buffer this large holds any token's user data.</summary>
        public const int THINWIRE_TOKEN_MAX_USER_DATA = 256;

        /// <summary><c>thinwire_config</c>: how a host is set up. Start from
        /// <see cref="thinwire_config_default"/>; the two key arrays are always 32 bytes.</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct thinwire_config
        {
            /// <summary>Accept incoming connections (a server).</summary>
            [MarshalAs(UnmanagedType.U1)] public bool server;
            /// <summary>A server's most concurrent connections.</summary>
            public uint max_connections;
            /// <summary>A server's most concurrent connections from one source.</summary>
            public uint max_connections_per_source;
            /// <summary>Connects a server processes per second from one source.</summary>
            public uint handshakes_per_second_per_source;
            /// <summary>A server's static secret key (32 bytes), used with <see cref="has_server_secret_key"/>.</summary>
            [MarshalAs(UnmanagedType.ByValArray, SizeConst = 32)] public byte[] server_secret_key;
            /// <summary>Use <see cref="server_secret_key"/>; otherwise a server draws a fresh key pair.</summary>
            [MarshalAs(UnmanagedType.U1)] public bool has_server_secret_key;
            /// <summary>Turns packet encryption off (trusted networks and measurements only).</summary>
            [MarshalAs(UnmanagedType.U1)] public bool insecure_cleartext;
            /// <summary>Fault injection: probability of dropping each datagram, both ways.</summary>
            public double fault_drop_rate;
            /// <summary>Fault injection: one-way delay added to each datagram (milliseconds).</summary>
            public uint fault_delay_ms;
            /// <summary>Fault injection: random jitter added to the delay (milliseconds).</summary>
            public uint fault_jitter_ms;
            /// <summary>Fault injection: seed (0: drawn from the OS).</summary>
            public ulong fault_seed;
            /// <summary>A server's connect-token key (32 bytes), used with <see cref="has_token_key"/>.</summary>
            [MarshalAs(UnmanagedType.ByValArray, SizeConst = 32)] public byte[] token_key;
            /// <summary>Require a connect token minted with <see cref="token_key"/> from every client.</summary>
            [MarshalAs(UnmanagedType.U1)] public bool has_token_key;
            /// <summary>ACKs on the tick: the period at which this host sends on each connection,
            /// in microseconds (33333 for 30 Hz); ACKs ride the next datagram. 0: ACKs at once.</summary>
            public uint tick_ack_period_us;
        }

        /// <summary><c>thinwire_event</c>: one event of <see cref="thinwire_host_service"/>.</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct thinwire_event
        {
            /// <summary>What happened.</summary>
            public EventType kind;
            /// <summary>The connection it concerns.</summary>
            public ulong conn;
            /// <summary>Connected: the peer opened the connection.</summary>
            [MarshalAs(UnmanagedType.U1)] public bool incoming;
            /// <summary>Message: the channel it arrived on.</summary>
            public byte channel;
            /// <summary>Message: a <c>thinwire_message *</c>, owned until <see cref="thinwire_message_free"/>.</summary>
            public IntPtr message;
            /// <summary>Message: it was sent with a deadline.</summary>
            [MarshalAs(UnmanagedType.U1)] public bool has_deadline;
            /// <summary>Message with a deadline: it arrived after its deadline.</summary>
            [MarshalAs(UnmanagedType.U1)] public bool deadline_late;
            /// <summary>Message with a deadline: estimated time from send to delivery (milliseconds).</summary>
            public uint deadline_age_ms;
            /// <summary>Disconnected: why.</summary>
            public DisconnectReason reason;
            /// <summary>Disconnected by the peer: its close code.</summary>
            public ulong close_code;
            /// <summary>Disconnected with <see cref="DisconnectReason.Refused"/>: why.</summary>
            public RefuseReason refuse_reason;
        }

        /// <summary><c>thinwire_connection_stats</c>: a snapshot of one connection's statistics.</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct thinwire_connection_stats
        {
            /// <summary>Smoothed round-trip time (microseconds).</summary>
            public ulong srtt_us;
            /// <summary>Round-trip time variation (microseconds).</summary>
            public ulong rttvar_us;
            /// <summary>Current retransmission timeout (microseconds).</summary>
            public ulong rto_us;
            /// <summary>Estimated packet loss rate, 0 to 1.</summary>
            public double loss_estimate;
            /// <summary>Packets sent.</summary>
            public ulong packets_sent;
            /// <summary>Bytes sent.</summary>
            public ulong bytes_sent;
            /// <summary>Packets received.</summary>
            public ulong packets_received;
            /// <summary>Bytes received.</summary>
            public ulong bytes_received;
            /// <summary>Packets declared lost.</summary>
            public ulong packets_lost;
            /// <summary>Message frames retransmitted after a loss.</summary>
            public ulong frames_retransmitted;
            /// <summary>Messages delivered to this side's application.</summary>
            public ulong messages_delivered;
        }

        /// <summary><c>thinwire_deadline</c>: what a deadline send asks for.</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct thinwire_deadline
        {
            /// <summary>The deadline, from the send call (milliseconds, above 0).</summary>
            public uint deadline_ms;
            /// <summary>The share of messages that must arrive in time, strictly between 0 and 1.</summary>
            public double target;
        }

        /// <summary><c>thinwire_send_options</c>: how a message is delivered.</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct thinwire_send_options
        {
            /// <summary>A <see cref="SendMode"/> value.</summary>
            public SendMode mode;
            /// <summary><see cref="SendMode.Latest"/>: the key whose newest value this is (below 2^62).</summary>
            public ulong latest_key;
            /// <summary><see cref="SendMode.Deadline"/>: the deadline and the target.</summary>
            public thinwire_deadline deadline;
        }

        /// <summary><c>thinwire_token_params</c>: the inputs of <see cref="thinwire_token_mint"/>.
        /// Every pointer points to pinned or native memory for the duration of the call.</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct thinwire_token_params
        {
            /// <summary><c>const uint8_t *</c>: the 32-byte token key shared with the servers.</summary>
            public IntPtr key;
            /// <summary>The backend's id for the client.</summary>
            public ulong client_id;
            /// <summary><c>const uint8_t *</c>: <see cref="user_data_len"/> bytes of claims (may be null when 0).</summary>
            public IntPtr user_data;
            /// <summary><c>size_t</c>: the length of <see cref="user_data"/>.</summary>
            public UIntPtr user_data_len;
            /// <summary><c>const uint8_t *</c>: the server's 32-byte static public key.</summary>
            public IntPtr server_key;
            /// <summary><c>const char *</c>: where the client connects, NUL-terminated.</summary>
            public IntPtr server_address;
            /// <summary>Unix time (seconds) from which the server refuses the token.</summary>
            public ulong expires_unix_s;
            /// <summary><c>const uint8_t *</c>: 24 fresh random bytes.</summary>
            public IntPtr nonce;
            /// <summary><c>const char *const *</c>: <see cref="server_address_count"/> NUL-terminated
            /// addresses, used instead of <see cref="server_address"/> when the count is above 0
            /// (the client connects to the first); may be null when it is 0.</summary>
            public IntPtr server_addresses;
            /// <summary><c>size_t</c>: 0 (the one <see cref="server_address"/>) or 1 to
            /// <see cref="THINWIRE_TOKEN_MAX_ADDRESSES"/>.</summary>
            public UIntPtr server_address_count;
        }

        /// <summary><c>const char *thinwire_error_string(int32_t)</c>: a static string (never
        /// freed, so it is returned as a pointer; <see cref="ErrorString"/> reads it).</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr thinwire_error_string(int status);

        /// <summary>The defaults for a client or a server.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern thinwire_config thinwire_config_default([MarshalAs(UnmanagedType.U1)] bool server);

        /// <summary>Creates a host bound to <paramref name="bind_address"/>; <paramref name="out_host"/> is a <c>thinwire_host *</c>.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_host_create([MarshalAs(UnmanagedType.LPStr)] string bind_address,
                                                         ref thinwire_config config, out IntPtr out_host);

        /// <summary>Closes the host's socket at once.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_host_close(IntPtr host);

        /// <summary>Frees a host (closing it first if needed).</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern void thinwire_host_destroy(IntPtr host);

        /// <summary>The UDP port the host is bound to.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_host_port(IntPtr host, out ushort port);

        /// <summary>Starts a connection to the server at <paramref name="address"/> holding
        /// <paramref name="server_key"/> (32 bytes), with <paramref name="channel_count"/> channels.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_connect(IntPtr host, [MarshalAs(UnmanagedType.LPStr)] string address,
                                                     byte[] server_key, ChannelKind[] channels, UIntPtr channel_count,
                                                     out ulong out_conn);

        /// <summary>Processes the network for at most <paramref name="timeout_ms"/> and writes the first event.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_host_service(IntPtr host, uint timeout_ms, out thinwire_event ev);

        /// <summary>Sends everything queued now.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_flush(IntPtr host);

        /// <summary>Closes a connection gracefully with <paramref name="code"/>.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_disconnect(IntPtr host, ulong conn, ulong code);

        /// <summary>Writes a snapshot of a connection's statistics.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_connection_get_stats(IntPtr host, ulong conn, out thinwire_connection_stats stats);

        /// <summary>The bytes of a received message (<c>const uint8_t *</c>).</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr thinwire_message_data(IntPtr message);

        /// <summary>The length in bytes of a received message.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern UIntPtr thinwire_message_len(IntPtr message);

        /// <summary>Frees a received message.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern void thinwire_message_free(IntPtr message);

        /// <summary>Writes a server host's static public key into <paramref name="out_key"/> (32 bytes).</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_host_public_key(IntPtr host, [Out] byte[] out_key);

        /// <summary>Parses a public key written as 64 hex digits into <paramref name="out_key"/> (32 bytes).</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_public_key_parse([MarshalAs(UnmanagedType.LPStr)] string hex, [Out] byte[] out_key);

        /// <summary>Writes a 32-byte public key as 64 hex digits and a NUL into <paramref name="out_hex"/> (65 bytes).</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_public_key_format(byte[] key, [Out] byte[] out_hex);

        /// <summary>Queues a message of <paramref name="len"/> bytes at <paramref name="data"/>
        /// on <paramref name="channel"/>, delivered as <paramref name="opts"/> says.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_send_with(IntPtr host, ulong conn, byte channel, IntPtr data, UIntPtr len,
                                                       ref thinwire_send_options opts);

        /// <summary>Deprecated: <see cref="thinwire_send_with"/> with null options.</summary>
        [Obsolete("use thinwire_send_with with null options")]
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_send(IntPtr host, ulong conn, byte channel, IntPtr data, UIntPtr len);

        /// <summary>Deprecated: <see cref="thinwire_send_with"/> with <see cref="SendMode.Latest"/>.</summary>
        [Obsolete("use thinwire_send_with with THINWIRE_SEND_MODE_LATEST")]
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_send_latest(IntPtr host, ulong conn, byte channel, ulong key, IntPtr data,
                                                         UIntPtr len);

        /// <summary>Deprecated: <see cref="thinwire_send_with"/> with <see cref="SendMode.Deadline"/>.</summary>
        [Obsolete("use thinwire_send_with with THINWIRE_SEND_MODE_DEADLINE")]
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_send_deadline(IntPtr host, ulong conn, byte channel, IntPtr data, UIntPtr len,
                                                           ref thinwire_deadline deadline);

        /// <summary>Starts a connection with a connect token's <paramref name="token_len"/> bytes.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_connect_with_token(IntPtr host, byte[] token, UIntPtr token_len,
                                                                ChannelKind[] channels, UIntPtr channel_count,
                                                                out ulong out_conn);

        /// <summary>On a server: the client id and user data of connection <paramref name="conn"/>'s
        /// token; <paramref name="inout_len"/> passes the buffer's capacity in and the length out.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_connection_token_claims(IntPtr host, ulong conn, out ulong out_client_id,
                                                                     [Out] byte[] out_user_data, ref UIntPtr inout_len);

        /// <summary>Mints a connect token into <paramref name="out_token"/>; <paramref name="inout_len"/>
        /// passes the buffer's capacity in and the token's length out.</summary>
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        public static extern Status thinwire_token_mint(ref thinwire_token_params parameters, [Out] byte[] out_token,
                                                        ref UIntPtr inout_len);

        /// <summary>The library's English description of <paramref name="status"/>.</summary>
        public static string ErrorString(Status status)
        {
            return Marshal.PtrToStringAnsi(thinwire_error_string((int)status));
        }
    }
}
