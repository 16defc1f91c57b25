//! X25519 for the handshake and the server's key pair ([`x25519`]): `snow`'s own, and in
//! fuzzer builds (`cargo fuzz` sets `cfg(fuzzing)`) the same function with its results
//! remembered. A fuzz run builds endpoint pairs from a few seeds thousands of times a second,
//! so the same scalar multiplications recur (and, instrumented, one costs more than the rest of
//! a run); remembered, they cost a lookup, and every output is bit for bit what the
//! multiplication gives, so a fuzz input behaves the same in the fuzzer and in `cargo test`.
//! Not tied to the `fuzzing` feature: the workspace's tests build with it, and those that count
//! the heap (`tests/alloc.rs`) would count the memo.

use snow::params::DHChoice;
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::Dh;

/// A fresh X25519 key holder.
pub(crate) fn x25519() -> Box<dyn Dh> {
    let dh = DefaultResolver
        .resolve_dh(&DHChoice::Curve25519)
        .expect("the default resolver has X25519");
    #[cfg(fuzzing)]
    let dh: Box<dyn Dh> = Box::new(memo::MemoDh::new(dh));
    dh
}

#[cfg(fuzzing)]
mod memo {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};

    use snow::params::DHChoice;
    use snow::resolvers::{CryptoResolver, DefaultResolver};
    use snow::types::{Dh, Random};

    type Key = [u8; 32];

    /// Results remembered at most; past this the memo starts over (a fuzzer's forged
    /// handshakes bring new keys without end).
    const MAX_REMEMBERED: usize = 1 << 14;

    /// Public key per private key, and shared secret per (private, public) pair.
    static PUBLIC: LazyLock<Mutex<HashMap<Key, Key>>> = LazyLock::new(Default::default);
    static SHARED: LazyLock<Mutex<HashMap<(Key, Key), Key>>> = LazyLock::new(Default::default);

    fn remembered<K: std::hash::Hash + Eq, E>(
        memo: &Mutex<HashMap<K, Key>>,
        key: K,
        compute: impl FnOnce() -> Result<Key, E>,
    ) -> Result<Key, E> {
        if let Some(v) = memo.lock().expect("memo lock").get(&key) {
            return Ok(*v);
        }
        let v = compute()?;
        let mut memo = memo.lock().expect("memo lock");
        if memo.len() >= MAX_REMEMBERED {
            memo.clear();
        }
        memo.insert(key, v);
        Ok(v)
    }

    fn key(bytes: &[u8]) -> Key {
        let mut k = [0u8; 32];
        k.copy_from_slice(&bytes[..32]);
        k
    }

    /// `snow`'s X25519 (`inner`, which computes on a miss) with remembered results.
    pub(super) struct MemoDh {
        inner: Box<dyn Dh>,
        privkey: Key,
        pubkey: Key,
    }

    impl MemoDh {
        pub(super) fn new(inner: Box<dyn Dh>) -> Self {
            Self {
                inner,
                privkey: [0; 32],
                pubkey: [0; 32],
            }
        }

        /// `snow`'s X25519 itself, for a miss.
        fn fresh() -> Box<dyn Dh> {
            DefaultResolver
                .resolve_dh(&DHChoice::Curve25519)
                .expect("the default resolver has X25519")
        }
    }

    impl Dh for MemoDh {
        fn name(&self) -> &'static str {
            self.inner.name()
        }
        fn pub_len(&self) -> usize {
            self.inner.pub_len()
        }
        fn priv_len(&self) -> usize {
            self.inner.priv_len()
        }
        fn set(&mut self, privkey: &[u8]) {
            self.privkey = key(privkey);
            let inner = &mut self.inner;
            let public = remembered(&PUBLIC, self.privkey, || {
                inner.set(privkey);
                Ok::<_, ()>(key(inner.pubkey()))
            });
            self.pubkey = public.expect("infallible");
        }
        /// As `snow`'s: 32 bytes from `rng` are the private key.
        fn generate(&mut self, rng: &mut dyn Random) -> Result<(), snow::Error> {
            let mut privkey = [0u8; 32];
            rng.try_fill_bytes(&mut privkey)?;
            self.set(&privkey);
            Ok(())
        }
        fn pubkey(&self) -> &[u8] {
            &self.pubkey
        }
        fn privkey(&self) -> &[u8] {
            &self.privkey
        }
        fn dh(&self, pubkey: &[u8], out: &mut [u8]) -> Result<(), snow::Error> {
            if pubkey.len() < 32 {
                return self.inner.dh(pubkey, out);
            }
            let shared = remembered(&SHARED, (self.privkey, key(pubkey)), || {
                let mut dh = Self::fresh();
                dh.set(&self.privkey);
                let mut shared = [0u8; 32];
                dh.dh(pubkey, &mut shared).map(|()| shared)
            })?;
            out[..32].copy_from_slice(&shared);
            Ok(())
        }
    }
}
