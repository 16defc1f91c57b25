// A C# client of an echo server (the Rust example server, or examples/c/echo_server.c): sends
// COUNT numbered messages on a reliable-ordered channel and checks that every echo comes back,
// intact and in order.
//
//   mono EchoClient.exe ADDRESS KEY [COUNT]    e.g. mono EchoClient.exe 127.0.0.1:7777 3f9a...c2 200
//
// KEY is the server's public key (64 hex digits, printed by the server). Exits 0 when all COUNT
// echoes arrived in order within 10 s, 1 otherwise.

using System;
using System.Diagnostics;
using System.Text;
using Thinwire;

static class EchoClient
{
    static int Main(string[] args)
    {
        if (args.Length < 2 || args.Length > 3)
        {
            Console.Error.WriteLine("usage: EchoClient.exe ADDRESS KEY [COUNT]");
            return 2;
        }
        try
        {
            return Run(args[0], PublicKey.Parse(args[1]), args.Length == 3 ? int.Parse(args[2]) : 200);
        }
        catch (ThinwireException e)
        {
            Console.Error.WriteLine("echo_client: " + e.Message);
            return 1;
        }
    }

    static int Run(string address, PublicKey key, int count)
    {
        using (var host = Host.CreateClient())
        {
            var conn = host.Connect(address, key, ChannelKind.ReliableOrdered);
            // Longer than the 5 s handshake timeout, so that a failed handshake reports its reason.
            if (!WaitFor(host, 8, ev => ev is ConnectedEvent)) return 1;

            for (int i = 0; i < count; i++) host.Send(conn, 0, Encoding.UTF8.GetBytes("line " + i));
            host.Flush();

            int next = 0, wrong = 0;
            WaitFor(host, 10, ev => {
                var message = ev as MessageEvent;
                if (message == null) return false;
                if (Encoding.UTF8.GetString(message.Data) != "line " + next) wrong++;
                next++;
                return next == count;
            });
            var stats = host.Stats(conn);
            Console.WriteLine("echo_client: " + next + " of " + count + " echoes in order, " + wrong + " wrong; srtt " +
                              stats.srtt_us + " us, " + stats.packets_sent + " packets sent");
            host.Disconnect(conn);
            WaitFor(host, 2, ev => ev is DisconnectedEvent);
            return next == count && wrong == 0 ? 0 : 1;
        }
    }

    // Services the host until `done` says so or `seconds` pass; an unexpected disconnection ends it.
    static bool WaitFor(Host host, int seconds, Func<HostEvent, bool> done)
    {
        for (var clock = Stopwatch.StartNew(); clock.Elapsed.TotalSeconds < seconds;)
        {
            var ev = host.Service(50);
            if (ev == null) continue;
            if (done(ev)) return true;
            var end = ev as DisconnectedEvent;
            if (end != null)
            {
                Console.Error.WriteLine("echo_client: disconnected (" + end.Reason + ", refuse reason " + end.RefuseReason + ")");
                return false;
            }
        }
        Console.Error.WriteLine("echo_client: timed out");
        return false;
    }
}
