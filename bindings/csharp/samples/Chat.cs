// thinwire chat in C#: a server that relays every line to every client, and a client that
// sends the lines it reads from standard input and prints the lines it receives.
//
//   mono Chat.exe server [BIND] [--until-empty]   e.g. mono Chat.exe server 0.0.0.0:7777
//   mono Chat.exe client ADDRESS KEY              e.g. mono Chat.exe client 127.0.0.1:7777 3f9a...c2
//
// The server prints "chat server on PORT" and "server key: HEX" (the key clients need); with
// --until-empty it exits once its last client has left. The client exits at the end of its
// input, once the server has relayed as many lines as it sent (10 s at most), so that
// `printf 'hi\nbye\n' | mono Chat.exe client ...` is a complete session. Exit code 0 on success.
//
// The game-loop shape: the host is serviced from one thread (here Main, in Unity Update());
// a reader thread only hands lines over through a queue.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Text;
using System.Threading;
using Thinwire;

static class Chat
{
    const byte ChatChannel = 0;

    static int Main(string[] args)
    {
        try
        {
            if (args.Length >= 1 && args[0] == "server")
                return Server(args.Length >= 2 && !args[1].StartsWith("--") ? args[1] : "127.0.0.1:0",
                              Array.IndexOf(args, "--until-empty") >= 0);
            if (args.Length == 3 && args[0] == "client") return Client(args[1], PublicKey.Parse(args[2]));
        }
        catch (ThinwireException e)
        {
            Console.Error.WriteLine("chat: " + e.Message);
            return 1;
        }
        Console.Error.WriteLine("usage: Chat.exe server [BIND] [--until-empty] | Chat.exe client ADDRESS KEY");
        return 2;
    }

    static int Server(string bind, bool untilEmpty)
    {
        using (var host = Host.CreateServer(bind))
        {
            Console.WriteLine("chat server on " + host.Port);
            Console.WriteLine("server key: " + host.PublicKey);
            Console.Out.Flush();
            var clients = new HashSet<ulong>();
            bool anyoneCame = false;
            while (!(untilEmpty && anyoneCame && clients.Count == 0))
            {
                var ev = host.Service(50);
                if (ev is ConnectedEvent)
                {
                    clients.Add(ev.Connection);
                    anyoneCame = true;
                    Console.Error.WriteLine("chat: " + ev.Connection + " joined");
                }
                else if (ev is DisconnectedEvent)
                {
                    clients.Remove(ev.Connection);
                    Console.Error.WriteLine("chat: " + ev.Connection + " left (" + ((DisconnectedEvent)ev).Reason + ")");
                }
                else if (ev is MessageEvent)
                {
                    var line = Encoding.UTF8.GetBytes("[" + ev.Connection + "] " + Encoding.UTF8.GetString(((MessageEvent)ev).Data));
                    foreach (var c in clients) host.Send(c, ChatChannel, line);
                }
            }
        }
        return 0;
    }

    static int Client(string address, PublicKey key)
    {
        using (var host = Host.CreateClient())
        {
            var conn = host.Connect(address, key, ChannelKind.ReliableOrdered);
            var lines = new Queue<string>();
            bool inputDone = false;
            var reader = new Thread(() => {
                string line;
                while ((line = Console.In.ReadLine()) != null)
                    lock (lines) lines.Enqueue(line);
                lock (lines) inputDone = true;
            });
            reader.IsBackground = true;
            reader.Start();

            int sent = 0, received = 0;
            bool connected = false;
            Stopwatch sinceEof = null;
            while (sinceEof == null || (received < sent && sinceEof.Elapsed.TotalSeconds < 10))
            {
                HostEvent ev;
                while (host.TryService(out ev))
                {
                    if (ev is ConnectedEvent) connected = true;
                    if (ev is MessageEvent)
                    {
                        Console.WriteLine(Encoding.UTF8.GetString(((MessageEvent)ev).Data));
                        received++;
                    }
                    if (ev is DisconnectedEvent)
                    {
                        Console.Error.WriteLine("chat: disconnected (" + ((DisconnectedEvent)ev).Reason + ")");
                        return 1;
                    }
                }
                lock (lines)
                {
                    // Lines may be queued before the handshake completes; they leave with it.
                    while (lines.Count > 0)
                    {
                        host.Send(conn, ChatChannel, Encoding.UTF8.GetBytes(lines.Dequeue()));
                        sent++;
                    }
                    if (inputDone && sinceEof == null) sinceEof = Stopwatch.StartNew();
                }
                host.Flush();
                Thread.Sleep(connected ? 16 : 5); // a 60 Hz frame
            }
            host.Disconnect(conn);
            for (var end = Stopwatch.StartNew(); end.Elapsed.TotalSeconds < 2;)
                if (host.Service(50) is DisconnectedEvent) break;
            Console.Error.WriteLine("chat: " + sent + " lines sent, " + received + " received");
            return received >= sent ? 0 : 1;
        }
    }
}
