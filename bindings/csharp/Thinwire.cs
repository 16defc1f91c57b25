// A small safe layer over Thinwire.Native.cs: a Host that owns its native handle (IDisposable),
// events as classes with the message copied into a byte[], a PublicKey value, and failures as
// ThinwireException carrying the status and the library's description of it.
//
// The host is polled, like the C API: call Service or TryService every frame, on the thread
// that owns the host. Nothing here is thread-safe; nothing calls back from native code.
// Written for C# 6 (Mono's mcs, Unity's Mono and IL2CPP): byte[] with offset and count, no Span.

using System;
using System.Runtime.InteropServices;

namespace Thinwire
{
    /// <summary>A thinwire call failed: <see cref="Status"/> says why, the message says which call.</summary>
    public sealed class ThinwireException : Exception
    {
        /// <summary>The status the C call returned.</summary>
        public Status Status { get; private set; }

        /// <summary>A failure of <paramref name="call"/> with <paramref name="status"/>.</summary>
        public ThinwireException(string call, Status status)
            : base(call + ": " + Native.ErrorString(status) + " (" + status + ")")
        {
            Status = status;
        }

        /// <summary>Throws unless <paramref name="status"/> is <see cref="Status.Ok"/>.</summary>
        internal static void Check(string call, Status status)
        {
            if (status != Status.Ok) throw new ThinwireException(call, status);
        }
    }

    /// <summary>A server's static public key (32 bytes), written as 64 hex digits. Clients
    /// connect with it; only the holder of the secret half completes the handshake.</summary>
    public struct PublicKey : IEquatable<PublicKey>
    {
        /// <summary>The key's length in bytes.</summary>
        public const int Length = 32;

        readonly byte[] bytes;

        /// <summary>A key from its 32 bytes (copied).</summary>
        public PublicKey(byte[] key)
        {
            if (key == null || key.Length != Length) throw new ArgumentException("a public key is 32 bytes", "key");
            bytes = (byte[])key.Clone();
        }

        /// <summary>Parses 64 hex digits (as servers print their key); throws
        /// <see cref="ThinwireException"/> with <see cref="Status.InvalidArgument"/> for anything else.</summary>
        public static PublicKey Parse(string hex)
        {
            if (hex == null) throw new ArgumentNullException("hex");
            var key = new byte[Length];
            ThinwireException.Check("thinwire_public_key_parse", Native.thinwire_public_key_parse(hex, key));
            return new PublicKey(key);
        }

        /// <summary>A copy of the key's 32 bytes.</summary>
        public byte[] ToArray()
        {
            return (byte[])Bytes.Clone();
        }

        /// <summary>The key's bytes, not copied (for the native calls).</summary>
        internal byte[] Bytes
        {
            get
            {
                if (bytes == null) throw new InvalidOperationException("an empty PublicKey (default) has no bytes");
                return bytes;
            }
        }

        /// <summary>The key as 64 lowercase hex digits.</summary>
        public override string ToString()
        {
            if (bytes == null) return "";
            var hex = new byte[2 * Length + 1];
            ThinwireException.Check("thinwire_public_key_format", Native.thinwire_public_key_format(bytes, hex));
            return System.Text.Encoding.ASCII.GetString(hex, 0, 2 * Length);
        }

        /// <summary>The same 32 bytes.</summary>
        public bool Equals(PublicKey other)
        {
            if (bytes == null || other.bytes == null) return bytes == other.bytes;
            for (int i = 0; i < Length; i++)
                if (bytes[i] != other.bytes[i]) return false;
            return true;
        }

        /// <summary>The same 32 bytes.</summary>
        public override bool Equals(object obj)
        {
            return obj is PublicKey && Equals((PublicKey)obj);
        }

        /// <summary>A hash of the key's first bytes.</summary>
        public override int GetHashCode()
        {
            return bytes == null ? 0 : BitConverter.ToInt32(bytes, 0);
        }
    }

    /// <summary>How a message is delivered (the C <c>thinwire_send_options</c>).
    /// <c>default(SendOptions)</c> is <see cref="Plain"/>.</summary>
    public struct SendOptions
    {
        internal Native.thinwire_send_options native;

        /// <summary>As the channel's class says (any class but latest-value).</summary>
        public static SendOptions Plain
        {
            get { return new SendOptions(); }
        }

        /// <summary>The newest value for <paramref name="key"/> (below 2^62), on a latest-value
        /// channel only: an older unacknowledged value for the same key is superseded.</summary>
        public static SendOptions Latest(ulong key)
        {
            var o = new SendOptions();
            o.native.mode = SendMode.Latest;
            o.native.latest_key = key;
            return o;
        }

        /// <summary>A deadline message, on a channel of any class: it arrives within
        /// <paramref name="deadlineMs"/> with probability <paramref name="target"/> (e.g. 0.999).</summary>
        public static SendOptions Deadline(uint deadlineMs, double target)
        {
            var o = new SendOptions();
            o.native.mode = SendMode.Deadline;
            o.native.deadline.deadline_ms = deadlineMs;
            o.native.deadline.target = target;
            return o;
        }
    }

    /// <summary>Something <see cref="Host.Service"/> found: a <see cref="ConnectedEvent"/>,
    /// <see cref="MessageEvent"/> or <see cref="DisconnectedEvent"/>.</summary>
    public abstract class HostEvent
    {
        /// <summary>The connection it concerns.</summary>
        public ulong Connection { get; internal set; }
    }

    /// <summary>A connection completed its handshake.</summary>
    public sealed class ConnectedEvent : HostEvent
    {
        /// <summary>The peer opened the connection (on a server).</summary>
        public bool Incoming { get; internal set; }
    }

    /// <summary>A message arrived.</summary>
    public sealed class MessageEvent : HostEvent
    {
        /// <summary>The channel it arrived on.</summary>
        public byte Channel { get; internal set; }
        /// <summary>The message's bytes (a copy; the native message is freed already).</summary>
        public byte[] Data { get; internal set; }
        /// <summary>It was sent with <see cref="SendOptions.Deadline"/>.</summary>
        public bool HasDeadline { get; internal set; }
        /// <summary>A deadline message that arrived after its deadline.</summary>
        public bool DeadlineLate { get; internal set; }
        /// <summary>A deadline message's estimated time from send to delivery (milliseconds).</summary>
        public uint DeadlineAgeMs { get; internal set; }
    }

    /// <summary>A connection ended; its id is no longer valid.</summary>
    public sealed class DisconnectedEvent : HostEvent
    {
        /// <summary>Why.</summary>
        public DisconnectReason Reason { get; internal set; }
        /// <summary>The peer's close code (<see cref="DisconnectReason.ClosedByPeer"/>).</summary>
        public ulong CloseCode { get; internal set; }
        /// <summary>Why the server refused (<see cref="DisconnectReason.Refused"/>).</summary>
        public RefuseReason RefuseReason { get; internal set; }
    }

    /// <summary>A thinwire host: one UDP socket and its connections, driven by
    /// <see cref="Service"/>. Use it from one thread at a time; dispose it to close the socket.</summary>
    public sealed class Host : IDisposable
    {
        IntPtr handle;

        Host(IntPtr handle)
        {
            this.handle = handle;
        }

        /// <summary>A host bound to <paramref name="bindAddress"/> (e.g. "0.0.0.0:7777"; port 0
        /// picks a free one) set up by <paramref name="config"/> (from
        /// <see cref="Native.thinwire_config_default"/>, changed as needed).</summary>
        public static Host Create(string bindAddress, Native.thinwire_config config)
        {
            if (bindAddress == null) throw new ArgumentNullException("bindAddress");
            IntPtr handle;
            ThinwireException.Check("thinwire_host_create", Native.thinwire_host_create(bindAddress, ref config, out handle));
            return new Host(handle);
        }

        /// <summary>A client host with the defaults (any port, unless <paramref name="bindAddress"/> says).</summary>
        public static Host CreateClient(string bindAddress = "0.0.0.0:0")
        {
            return Create(bindAddress, Native.thinwire_config_default(false));
        }

        /// <summary>A server host with the defaults, and with the 32-byte static secret key
        /// <paramref name="secretKey"/> when given (otherwise a fresh key pair at every start).</summary>
        public static Host CreateServer(string bindAddress, byte[] secretKey = null)
        {
            var config = Native.thinwire_config_default(true);
            if (secretKey != null)
            {
                if (secretKey.Length != 32) throw new ArgumentException("a server secret key is 32 bytes", "secretKey");
                config.server_secret_key = (byte[])secretKey.Clone();
                config.has_server_secret_key = true;
            }
            return Create(bindAddress, config);
        }

        IntPtr Handle
        {
            get
            {
                if (handle == IntPtr.Zero) throw new ObjectDisposedException("Thinwire.Host");
                return handle;
            }
        }

        /// <summary>The UDP port the host is bound to.</summary>
        public ushort Port
        {
            get
            {
                ushort port;
                ThinwireException.Check("thinwire_host_port", Native.thinwire_host_port(Handle, out port));
                return port;
            }
        }

        /// <summary>A server's static public key, which its clients connect with
        /// (<see cref="Status.NotServer"/> on a client).</summary>
        public PublicKey PublicKey
        {
            get
            {
                var key = new byte[PublicKey.Length];
                ThinwireException.Check("thinwire_host_public_key", Native.thinwire_host_public_key(Handle, key));
                return new PublicKey(key);
            }
        }

        /// <summary>Starts a connection to the server at <paramref name="address"/> (e.g.
        /// "203.0.113.5:7777") holding <paramref name="serverKey"/>, with one channel per entry of
        /// <paramref name="channels"/> (1 to 64). A <see cref="ConnectedEvent"/> or
        /// <see cref="DisconnectedEvent"/> follows; messages may be sent at once.</summary>
        public ulong Connect(string address, PublicKey serverKey, params ChannelKind[] channels)
        {
            if (address == null) throw new ArgumentNullException("address");
            if (channels == null) throw new ArgumentNullException("channels");
            ulong conn;
            ThinwireException.Check("thinwire_connect", Native.thinwire_connect(
                Handle, address, serverKey.Bytes, channels, (UIntPtr)channels.Length, out conn));
            return conn;
        }

        /// <summary>Starts a connection with a connect token's bytes (from the matchmaking
        /// backend, or <see cref="ConnectToken.Mint"/>): to the address and key inside it.</summary>
        public ulong ConnectWithToken(byte[] token, params ChannelKind[] channels)
        {
            if (token == null) throw new ArgumentNullException("token");
            if (channels == null) throw new ArgumentNullException("channels");
            ulong conn;
            ThinwireException.Check("thinwire_connect_with_token", Native.thinwire_connect_with_token(
                Handle, token, (UIntPtr)token.Length, channels, (UIntPtr)channels.Length, out conn));
            return conn;
        }

        /// <summary>Processes the network for at most <paramref name="timeoutMs"/> milliseconds
        /// (0: only what has arrived) and returns the first event, or null when nothing happened.</summary>
        public HostEvent Service(int timeoutMs)
        {
            if (timeoutMs < 0) throw new ArgumentOutOfRangeException("timeoutMs");
            Native.thinwire_event ev;
            ThinwireException.Check("thinwire_host_service", Native.thinwire_host_service(Handle, (uint)timeoutMs, out ev));
            switch (ev.kind)
            {
                case EventType.Connected:
                    return new ConnectedEvent { Connection = ev.conn, Incoming = ev.incoming };
                case EventType.Message:
                    return new MessageEvent
                    {
                        Connection = ev.conn,
                        Channel = ev.channel,
                        Data = TakeMessage(ev.message),
                        HasDeadline = ev.has_deadline,
                        DeadlineLate = ev.deadline_late,
                        DeadlineAgeMs = ev.deadline_age_ms,
                    };
                case EventType.Disconnected:
                    return new DisconnectedEvent
                    {
                        Connection = ev.conn,
                        Reason = ev.reason,
                        CloseCode = ev.close_code,
                        RefuseReason = ev.refuse_reason,
                    };
                default:
                    return null;
            }
        }

        /// <summary>The next event that has arrived, without waiting: the game loop's
        /// <c>while (host.TryService(out ev)) ...</c>.</summary>
        public bool TryService(out HostEvent ev)
        {
            ev = Service(0);
            return ev != null;
        }

        // Copies a native message into a managed array and frees it.
        static byte[] TakeMessage(IntPtr message)
        {
            try
            {
                var data = new byte[(int)Native.thinwire_message_len(message)];
                if (data.Length > 0) Marshal.Copy(Native.thinwire_message_data(message), data, 0, data.Length);
                return data;
            }
            finally
            {
                Native.thinwire_message_free(message);
            }
        }

        /// <summary>Queues all of <paramref name="data"/> on <paramref name="channel"/> of
        /// <paramref name="conn"/> (the bytes are copied); it leaves with the next
        /// <see cref="Flush"/> or <see cref="Service"/>.</summary>
        public void Send(ulong conn, byte channel, byte[] data, SendOptions options = default(SendOptions))
        {
            if (data == null) throw new ArgumentNullException("data");
            Send(conn, channel, data, 0, data.Length, options);
        }

        /// <summary>Queues <paramref name="count"/> bytes of <paramref name="data"/> from
        /// <paramref name="offset"/>, delivered as <paramref name="options"/> says.</summary>
        public void Send(ulong conn, byte channel, byte[] data, int offset, int count,
                         SendOptions options = default(SendOptions))
        {
            if (data == null) throw new ArgumentNullException("data");
            if (offset < 0 || count < 0 || offset > data.Length - count) throw new ArgumentOutOfRangeException("count");
            var host = Handle;
            var pin = GCHandle.Alloc(data, GCHandleType.Pinned);
            try
            {
                var start = pin.AddrOfPinnedObject();
                ThinwireException.Check("thinwire_send_with", Native.thinwire_send_with(
                    host, conn, channel, new IntPtr(start.ToInt64() + offset), (UIntPtr)count, ref options.native));
            }
            finally
            {
                pin.Free();
            }
        }

        /// <summary>Sends everything queued now, without waiting for anything to arrive.</summary>
        public void Flush()
        {
            ThinwireException.Check("thinwire_flush", Native.thinwire_flush(Handle));
        }

        /// <summary>Closes <paramref name="conn"/> gracefully with <paramref name="code"/>: queued
        /// reliable data is delivered first; a <see cref="DisconnectedEvent"/> follows.</summary>
        public void Disconnect(ulong conn, ulong code = 0)
        {
            ThinwireException.Check("thinwire_disconnect", Native.thinwire_disconnect(Handle, conn, code));
        }

        /// <summary>A snapshot of <paramref name="conn"/>'s statistics.</summary>
        public Native.thinwire_connection_stats Stats(ulong conn)
        {
            Native.thinwire_connection_stats stats;
            ThinwireException.Check("thinwire_connection_get_stats", Native.thinwire_connection_get_stats(Handle, conn, out stats));
            return stats;
        }

        /// <summary>On a server: the user data of <paramref name="conn"/>'s connect token, and
        /// the backend's client id in <paramref name="clientId"/>.</summary>
        public byte[] TokenClaims(ulong conn, out ulong clientId)
        {
            var buffer = new byte[Native.THINWIRE_TOKEN_MAX_USER_DATA];
            var len = (UIntPtr)buffer.Length;
            ThinwireException.Check("thinwire_connection_token_claims",
                                    Native.thinwire_connection_token_claims(Handle, conn, out clientId, buffer, ref len));
            var data = new byte[(int)len];
            Array.Copy(buffer, data, data.Length);
            return data;
        }

        /// <summary>Frees the host (its socket closes; connections end without telling their
        /// peers: disconnect and service first for a graceful end). Disposing twice is harmless.</summary>
        public void Dispose()
        {
            Destroy();
            GC.SuppressFinalize(this);
        }

        /// <summary>Frees a host that was not disposed.</summary>
        ~Host()
        {
            Destroy();
        }

        void Destroy()
        {
            var h = handle;
            handle = IntPtr.Zero;
            if (h != IntPtr.Zero) Native.thinwire_host_destroy(h);
        }
    }

    /// <summary>Connect tokens as a matchmaking backend mints them (docs/C-API.md, "Connect tokens").</summary>
    public static class ConnectToken
    {
        /// <summary>Mints a token for one client and one server: <paramref name="tokenKey"/> is
        /// the 32-byte secret shared with the servers, <paramref name="nonce"/> 24 fresh random
        /// bytes, <paramref name="userData"/> at most 256 bytes (or null).</summary>
        public static byte[] Mint(byte[] tokenKey, ulong clientId, byte[] userData, PublicKey serverKey,
                                  string serverAddress, ulong expiresUnixSeconds, byte[] nonce)
        {
            if (tokenKey == null || tokenKey.Length != 32) throw new ArgumentException("a token key is 32 bytes", "tokenKey");
            if (nonce == null || nonce.Length != 24) throw new ArgumentException("a nonce is 24 bytes", "nonce");
            if (serverAddress == null) throw new ArgumentNullException("serverAddress");
            userData = userData ?? new byte[0];
            var pins = new[] {
                GCHandle.Alloc(tokenKey, GCHandleType.Pinned), GCHandle.Alloc(userData, GCHandleType.Pinned),
                GCHandle.Alloc(serverKey.Bytes, GCHandleType.Pinned), GCHandle.Alloc(nonce, GCHandleType.Pinned),
            };
            var address = Marshal.StringToHGlobalAnsi(serverAddress);
            try
            {
                var p = new Native.thinwire_token_params
                {
                    key = pins[0].AddrOfPinnedObject(),
                    client_id = clientId,
                    user_data = pins[1].AddrOfPinnedObject(),
                    user_data_len = (UIntPtr)userData.Length,
                    server_key = pins[2].AddrOfPinnedObject(),
                    server_address = address,
                    expires_unix_s = expiresUnixSeconds,
                    nonce = pins[3].AddrOfPinnedObject(),
                };
                var token = new byte[Native.THINWIRE_TOKEN_MAX_LEN];
                var len = (UIntPtr)token.Length;
                ThinwireException.Check("thinwire_token_mint", Native.thinwire_token_mint(ref p, token, ref len));
                Array.Resize(ref token, (int)len);
                return token;
            }
            finally
            {
                Marshal.FreeHGlobal(address);
                foreach (var pin in pins) pin.Free();
            }
        }
    }
}
