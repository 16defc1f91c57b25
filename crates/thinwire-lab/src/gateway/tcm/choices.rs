//! How the reproduction reads the paper's setup: each choice with the sentence it rests on
//! (Saldaña et al., Sec. III-IV), or the silence it fills.

/// The setup choices, in words (the report's list and `gateway.json`).
pub fn choices() -> Vec<String> {
    [
        "Saving level: Eq. 1 compares IP packets, 'NH se refiere al tamaño de una cabecera \
         IP/UDP, que será 28 bytes para IPv4' (Sec. III); the IP-level saving counts the \
         tunnel's common header CH = 25 B (IPv4 20 + L2TP 4 + PPP 1: Fig. 3's byte values are \
         not in the text) plus the gateway's 1 B bundle version, and per packet MH+RH as the \
         gateway's compressor writes it.",
        "The 30%: 'La Fig. 4 representa el BWR teórico para diferentes números de usuarios y \
         periodos, mostrando su comportamiento asintótico. Como puede observarse, se puede \
         conseguir un 30% de ahorro de ancho de banda usando IPv4' (Sec. III). The text ties \
         it to no player count or period: it is compared with Eq. 1's asymptote, and with the \
         20-player point at T = 25 ms, which Sec. IV places 'muy cerca de la asíntota'.",
        "Ethernet level: 'El ancho de banda del tráfico nativo es de 319 kbps a nivel eth' and \
         tc 'permite limitar el ancho de banda a nivel eth' (Sec. IV): 14 B of MAC header per \
         packet, what tc and a capture count (no FCS, preamble or gap).",
        "Router: 'El límite se ha establecido en 1 Mbps. El parámetro burst se ha establecido \
         en 5000 bytes. El tamaño del buffer se define según el tiempo máximo de un paquete en \
         él' (Sec. IV): tc's token bucket filter (rate 1 Mbit/s, burst 5000 B, latency 50 or \
         500 ms); iproute2 turns the latency into a byte limit on the waiting packets, rate x \
         latency + burst = 11,250 B or 67,500 B, drop-tail by size; the bucket lets 5000 B \
         pass at once after idle; a dequeued packet leaves at once (the LAN's rate is not \
         given).",
        "Bundles on the bottleneck travel in the paper's tunnel, 'el paquete multiplexado se \
         envía mediante un túnel L2TP' (Sec. III): CH 25 B (not thinwire's 59 B trunk \
         overhead) and at most 1,500 B of IP.",
        "Background sizes: 'el 50% son de 40 bytes, el 10% de 576, y el 40% restante de 1500' \
         (Sec. IV, after CAIDA's distributions, which are of IP lengths): IP sizes, 14 B of MAC \
         header added on the link; the background rate of the sweep is counted at Ethernet \
         level, as the native traffic's is.",
        "Background arrivals: 'el tráfico del juego y el de fondo se envían usando el generador \
         JTG, que ... lee los tiempos y tamaños de sendos ficheros' (Sec. IV); the background \
         file's times are not described: Poisson arrivals, sizes drawn independently.",
        "Game traffic: 'Se han combinado distintas trazas para obtener la de 20 usuarios' (Sec. \
         IV); the traces' distributions are not in the text: per player one packet every IAT \
         (uniform within ±20% of the fitted mean, random phase), payload uniform within ±6 B \
         of the fitted mean.",
        "Network and processing delay, added after the router: 'uno fijo de 20 ms ... y otro \
         lognormal de media 20 ms y varianza 5' (variance read as ms²) and 'un retardo de \
         procesado de 5 ms' for the multiplexed flows (Sec. IV).",
        "Loss (Figs. 6-7, 'Retardo y pérdidas'): the share of the game's original packets not \
         delivered; a dropped bundle loses every packet it carries.",
        "Crossover: 'a partir de 925 kbps de tráfico de fondo se puede ver que el tráfico \
         nativo tiene menos pérdidas que el multiplexado, para los dos buffer' (Sec. IV): the \
         background rate above which native loses less than T = 25 ms (the multiplexed flow \
         that loses least) at every swept rate, interpolated between sweep points (the \
         paper's sweep points are not given).",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}
