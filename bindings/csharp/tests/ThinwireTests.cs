// Tests of the C# binding: a server host and a client host in one process over loopback.
//
//   mono ThinwireTests.exe LAYOUT HEADER
//
// LAYOUT is the output of tests/layout.c (C sizes and offsets), HEADER is thinwire.h: the test
// checks that every struct, field, enum value and function of the header is declared in
// Thinwire.Native.cs with the same layout and value, and that the library exports every
// declared function. Then it runs the API: keys, error paths, 200 messages echoed, unreliable
// and latest-value sends, a close with a code, a connect token, disposing twice. Prints
// "N passed, M failed"; exits 1 on any failure.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.RegularExpressions;
using Thinwire;

static class ThinwireTests
{
    static int passed, failed;

    static void Check(bool ok, string what)
    {
        if (ok) passed++;
        else
        {
            failed++;
            Console.WriteLine("FAIL: " + what);
        }
    }

    // Runs `body` and checks that it throws a ThinwireException with `status`.
    static void Throws(Status status, string what, Action body)
    {
        try
        {
            body();
            Check(false, what + ": no exception (expected " + status + ")");
        }
        catch (ThinwireException e)
        {
            Check(e.Status == status, what + ": " + e.Status + " instead of " + status);
            Check(e.Message.Contains(Native.ErrorString(status)), what + ": message without the library's text: " + e.Message);
        }
    }

    // Services every host until `done` holds or `seconds` pass; every event goes to `onEvent`.
    static bool Pump(Host[] hosts, Func<bool> done, double seconds, Action<Host, HostEvent> onEvent)
    {
        var clock = Stopwatch.StartNew();
        while (!done())
        {
            if (clock.Elapsed.TotalSeconds > seconds) return false;
            foreach (var host in hosts)
            {
                var ev = host.Service(1);
                while (ev != null)
                {
                    onEvent(host, ev);
                    ev = host.Service(0);
                }
            }
        }
        return true;
    }

    static byte[] Text(string s)
    {
        return Encoding.UTF8.GetBytes(s);
    }

    static string Text(byte[] b)
    {
        return Encoding.UTF8.GetString(b);
    }

    static int Main(string[] args)
    {
        if (args.Length != 2)
        {
            Console.Error.WriteLine("usage: ThinwireTests.exe LAYOUT HEADER");
            return 2;
        }
        var tests = new Action[] {
            () => Layout(args[0]), () => HeaderDeclared(args[1]), Keys, ErrorPaths, RoundTrip, Tokens, DisposeTwice,
        };
        foreach (var test in tests)
        {
            try
            {
                test();
            }
            catch (Exception e)
            {
                Check(false, test.Method.Name + " threw " + e);
            }
        }
        Console.WriteLine(passed + " passed, " + failed + " failed");
        return failed == 0 ? 0 : 1;
    }

    // Every size and offset that layout.c printed equals the marshalled C# layout, and every
    // C# field is one layout.c knows.
    static void Layout(string path)
    {
        var fieldsSeen = new Dictionary<Type, int>();
        foreach (var line in File.ReadAllLines(path))
        {
            var parts = line.Split(' ');
            var name = parts[0].Split('.');
            var expected = int.Parse(parts[1]);
            var type = typeof(Native).GetNestedType(name[0]);
            if (type == null)
            {
                Check(false, "struct " + name[0] + " not declared");
                continue;
            }
            if (name.Length == 1)
            {
                Check(Marshal.SizeOf(type) == expected, name[0] + ": size " + Marshal.SizeOf(type) + ", C says " + expected);
                continue;
            }
            int count;
            fieldsSeen.TryGetValue(type, out count);
            fieldsSeen[type] = count + 1;
            if (type.GetField(name[1]) == null)
            {
                Check(false, line + ": field not declared");
                continue;
            }
            var offset = (int)Marshal.OffsetOf(type, name[1]);
            Check(offset == expected, line + ": C# offset " + offset);
        }
        foreach (var seen in fieldsSeen)
        {
            var declared = seen.Key.GetFields(BindingFlags.Public | BindingFlags.Instance).Length;
            Check(declared == seen.Value, seen.Key.Name + ": " + declared + " C# fields, C has " + seen.Value);
        }
        Check(fieldsSeen.Count == 6, "layout.c covered " + fieldsSeen.Count + " structs, expected 6");
    }

    // Every enum value, constant and function of thinwire.h has its C# declaration.
    static void HeaderDeclared(string path)
    {
        var header = File.ReadAllText(path);
        var enums = new Dictionary<string, Type> {
            { "THINWIRE_STATUS_", typeof(Status) }, { "THINWIRE_EVENT_TYPE_", typeof(EventType) },
            { "THINWIRE_DISCONNECT_REASON_", typeof(DisconnectReason) }, { "THINWIRE_REFUSE_REASON_", typeof(RefuseReason) },
            { "THINWIRE_CHANNEL_KIND_", typeof(ChannelKind) }, { "THINWIRE_SEND_MODE_", typeof(SendMode) },
        };
        int values = 0;
        foreach (Match m in Regex.Matches(header, @"^\s*(THINWIRE_[A-Z_]+) = (\d+),", RegexOptions.Multiline))
        {
            var cname = m.Groups[1].Value;
            var prefix = enums.Keys.Where(p => cname.StartsWith(p)).OrderByDescending(p => p.Length).FirstOrDefault();
            if (prefix == null)
            {
                Check(false, cname + ": no C# enum for it");
                continue;
            }
            var pascal = string.Concat(cname.Substring(prefix.Length).Split('_')
                                           .Select(w => w.Substring(0, 1) + w.Substring(1).ToLowerInvariant()));
            var type = enums[prefix];
            var ok = Enum.IsDefined(type, pascal) &&
                     Convert.ToInt64(Enum.Parse(type, pascal)) == long.Parse(m.Groups[2].Value);
            Check(ok, cname + " = " + m.Groups[2].Value + ": not " + type.Name + "." + pascal + " with that value");
            values++;
        }
        Check(values >= 48, "found only " + values + " enum values in the header");
        foreach (Match m in Regex.Matches(header, @"^#define (THINWIRE_TOKEN_\w+) (\d+)", RegexOptions.Multiline))
        {
            var field = typeof(Native).GetField(m.Groups[1].Value);
            Check(field != null && field.GetValue(null).ToString() == m.Groups[2].Value, m.Value + ": not in Native");
        }
        int structs = 0;
        foreach (Match m in Regex.Matches(header, @"^typedef struct (thinwire_\w+) \{(.*?)^\} \1;",
                                          RegexOptions.Multiline | RegexOptions.Singleline))
        {
            var cFields = Regex.Matches(m.Groups[2].Value, @"^  [a-z][^;\n]*?(\w+)(?:\[\w+\])?;$", RegexOptions.Multiline)
                              .Cast<Match>().Select(f => f.Groups[1].Value);
            var type = typeof(Native).GetNestedType(m.Groups[1].Value);
            var csFields = type == null ? new string[0] : type.GetFields().Select(f => f.Name);
            Check(cFields.SequenceEqual(csFields), m.Groups[1].Value + ": C fields " + string.Join(" ", cFields) +
                                                       ", C# fields " + string.Join(" ", csFields));
            structs++;
        }
        Check(structs == 6, structs + " structs in the header, expected 6 (add new ones to tests/layout.c)");
        var imported = new HashSet<string>(typeof(Native).GetMethods()
                                               .Where(f => f.GetCustomAttributes(typeof(DllImportAttribute), false).Length > 0)
                                               .Select(f => f.Name));
        int functions = 0;
        // Declarations start a line (comments are indented): "enum thinwire_status thinwire_flush(".
        foreach (Match m in Regex.Matches(header, @"^[a-z][^(\n]*\b(thinwire_\w+)\(", RegexOptions.Multiline))
        {
            Check(imported.Contains(m.Groups[1].Value), m.Groups[1].Value + ": no DllImport");
            functions++;
        }
        Check(functions == imported.Count, functions + " functions in the header, " + imported.Count + " imported");
        // Binds every declaration to the library now: a name the library does not export throws.
        Marshal.PrelinkAll(typeof(Native));
        passed++;
    }

    static void Keys()
    {
        using (var server = Host.CreateServer("127.0.0.1:0"))
        {
            var key = server.PublicKey;
            var hex = key.ToString();
            Check(hex.Length == 64 && Regex.IsMatch(hex, "^[0-9a-f]{64}$"), "key as hex: " + hex);
            Check(PublicKey.Parse(hex).Equals(key), "parse of the printed key gives the key");
            Check(key.ToArray().Length == 32 && new PublicKey(key.ToArray()).Equals(key), "a key from its bytes");
        }
        var secret = new byte[32];
        for (int i = 0; i < 32; i++) secret[i] = (byte)(i + 1);
        using (var a = Host.CreateServer("127.0.0.1:0", secret))
        using (var b = Host.CreateServer("127.0.0.1:0", secret))
            Check(a.PublicKey.Equals(b.PublicKey), "a fixed secret key gives the same public key");
    }

    static void ErrorPaths()
    {
        Throws(Status.InvalidArgument, "a key that is not hex", () => PublicKey.Parse("not a key"));
        Throws(Status.InvalidArgument, "a key too short", () => PublicKey.Parse("abcd"));
        Throws(Status.InvalidArgument, "a bad bind address", () => Host.CreateClient("nowhere"));
        using (var client = Host.CreateClient("127.0.0.1:0"))
        using (var server = Host.CreateServer("127.0.0.1:0"))
        {
            Throws(Status.NotServer, "a client's public key", () => { var k = client.PublicKey; });
            Throws(Status.InvalidArgument, "a bad server address",
                   () => client.Connect("not an address", server.PublicKey, ChannelKind.ReliableOrdered));
            Throws(Status.InvalidArgument, "no channels", () => client.Connect("127.0.0.1:1", server.PublicKey));
            Throws(Status.UnknownConnection, "a send on no connection", () => client.Send(12345, 0, Text("x")));
            var conn = client.Connect("127.0.0.1:" + server.Port, server.PublicKey, ChannelKind.ReliableOrdered,
                                      ChannelKind.LatestReliable);
            Throws(Status.UnknownChannel, "a send on channel 9", () => client.Send(conn, 9, Text("x")));
            Throws(Status.WrongChannelKind, "a plain send on a latest channel", () => client.Send(conn, 1, Text("x")));
            Throws(Status.WrongChannelKind, "a latest send on an ordered channel",
                   () => client.Send(conn, 0, Text("x"), SendOptions.Latest(1)));
            Throws(Status.InvalidDeadline, "a deadline target of 2",
                   () => client.Send(conn, 0, Text("x"), SendOptions.Deadline(100, 2.0)));
            Throws(Status.BadToken, "a token that is not one",
                   () => client.ConnectWithToken(new byte[] { 1, 2, 3 }, ChannelKind.ReliableOrdered));
            try
            {
                client.Send(conn, 0, Text("x"), 1, 5);
                Check(false, "a range past the array's end was accepted");
            }
            catch (ArgumentOutOfRangeException)
            {
                passed++;
            }
        }
    }

    // Connects, echoes 200 reliable messages, sends unreliable and latest-value ones, closes
    // with a code, and checks what each side saw.
    static void RoundTrip()
    {
        using (var server = Host.CreateServer("127.0.0.1:0"))
        using (var client = Host.CreateClient("127.0.0.1:0"))
        {
            var hosts = new[] { server, client };
            var conn = client.Connect("127.0.0.1:" + server.Port, server.PublicKey, ChannelKind.ReliableOrdered,
                                      ChannelKind.Unreliable, ChannelKind.LatestReliable);
            bool serverConnected = false, clientConnected = false;
            var echoes = new List<string>();
            var unreliable = new List<string>();
            var latest = new List<string>();
            DisconnectedEvent serverSaw = null, clientSaw = null;
            Action<Host, HostEvent> onEvent = (host, ev) => {
                var connected = ev as ConnectedEvent;
                var message = ev as MessageEvent;
                var disconnected = ev as DisconnectedEvent;
                if (connected != null && host == server)
                {
                    Check(connected.Incoming, "the server's connection is incoming");
                    serverConnected = true;
                }
                if (connected != null && host == client)
                {
                    Check(!connected.Incoming && connected.Connection == conn, "the client's connection is its own");
                    clientConnected = true;
                }
                if (message != null && host == server && message.Channel == 0) server.Send(message.Connection, 0, message.Data);
                if (message != null && host == server && message.Channel == 1) unreliable.Add(Text(message.Data));
                if (message != null && host == server && message.Channel == 2) latest.Add(Text(message.Data));
                if (message != null && host == client) echoes.Add(Text(message.Data));
                if (disconnected != null && host == server) serverSaw = disconnected;
                if (disconnected != null && host == client) clientSaw = disconnected;
            };
            Check(Pump(hosts, () => clientConnected && serverConnected, 5, onEvent), "both sides connected");

            for (int i = 0; i < 200; i++) client.Send(conn, 0, Text("message " + i));
            client.Flush();
            Check(Pump(hosts, () => echoes.Count >= 200, 10, onEvent), "200 echoes within 10 s (" + echoes.Count + ")");
            bool inOrder = echoes.Count == 200;
            for (int i = 0; i < echoes.Count && inOrder; i++) inOrder = echoes[i] == "message " + i;
            Check(inOrder, "the 200 echoes came back in order, intact");
            var padded = Text("xxpaddedxx");
            client.Send(conn, 0, padded, 2, 6);
            Check(Pump(hosts, () => echoes.Count >= 201, 5, onEvent) && echoes[200] == "padded", "a send of a slice");

            for (int i = 0; i < 10; i++) client.Send(conn, 1, Text("u" + i));
            for (int i = 0; i < 5; i++) client.Send(conn, 2, Text("v" + i), SendOptions.Latest(7));
            client.Flush();
            Check(Pump(hosts, () => latest.Contains("v4"), 5, onEvent), "the newest latest value arrived");
            Check(latest.Count > 0 && latest[latest.Count - 1] == "v4", "nothing older after the newest value");
            Pump(hosts, () => unreliable.Count >= 10, 1, onEvent);
            Check(unreliable.Count >= 1 && unreliable.All(u => u.StartsWith("u")), "unreliable messages arrived (" + unreliable.Count + " of 10 on loopback)");

            var stats = client.Stats(conn);
            Check(stats.packets_sent > 0 && stats.messages_delivered >= 201, "statistics count packets and messages");

            client.Disconnect(conn, 42);
            Check(Pump(hosts, () => serverSaw != null && clientSaw != null, 5, onEvent), "both sides saw the end");
            Check(serverSaw != null && serverSaw.Reason == DisconnectReason.ClosedByPeer && serverSaw.CloseCode == 42,
                  "the server saw the close code 42");
            Check(clientSaw != null && clientSaw.Reason == DisconnectReason.LocallyClosed, "the client closed it");
            Throws(Status.UnknownConnection, "a send on the ended connection", () => client.Send(conn, 0, Text("late")));
        }
    }

    // A server that requires connect tokens admits a client with a minted one and reads its claims.
    static void Tokens()
    {
        var tokenKey = new byte[32];
        for (int i = 0; i < 32; i++) tokenKey[i] = (byte)(100 + i);
        var config = Native.thinwire_config_default(true);
        config.token_key = tokenKey;
        config.has_token_key = true;
        using (var server = Host.Create("127.0.0.1:0", config))
        using (var client = Host.CreateClient("127.0.0.1:0"))
        {
            var expires = (ulong)(DateTime.UtcNow - new DateTime(1970, 1, 1)).TotalSeconds + 30;
            var token = ConnectToken.Mint(tokenKey, 77, Text("team red"), server.PublicKey, "127.0.0.1:" + server.Port,
                                          expires, new byte[24]);
            Check(token.Length > 0 && token.Length <= Native.THINWIRE_TOKEN_MAX_LEN, "a token of " + token.Length + " bytes");
            var conn = client.ConnectWithToken(token, ChannelKind.ReliableOrdered);
            ulong? serverConn = null;
            bool clientConnected = false;
            Check(Pump(new[] { server, client }, () => clientConnected && serverConn != null, 5, (host, ev) => {
                if (ev is ConnectedEvent && host == server) serverConn = ev.Connection;
                if (ev is ConnectedEvent && host == client) clientConnected = true;
            }), "connected with a token");
            ulong clientId = 0;
            var userData = serverConn == null ? new byte[0] : server.TokenClaims(serverConn.Value, out clientId);
            Check(Text(userData) == "team red" && clientId == 77, "the token's claims reached the server");
            Throws(Status.NoClaims, "claims of an outgoing connection", () => { ulong id; client.TokenClaims(conn, out id); });
        }
    }

    static void DisposeTwice()
    {
        var host = Host.CreateClient("127.0.0.1:0");
        host.Dispose();
        host.Dispose();
        try
        {
            host.Flush();
            Check(false, "a call on a disposed host did not throw");
        }
        catch (ObjectDisposedException)
        {
            passed++;
        }
    }
}
