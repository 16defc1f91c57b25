//! What an idle connection keeps, packed into a few bytes while it rests, and given back whole
//! at its next packet.
//!
//! A connection's loss-recovery and acknowledgement state is a few hundred bytes of fields laid
//! out for speed (16-byte durations, 8-byte counters, `f64` estimates), most of whose values are
//! small numbers. While the connection is idle nobody reads them, so it packs them
//! ([`Parked::park`]): small numbers as LEB128 (7 bits a byte, low bits first), signed ones
//! zigzagged first, floating-point values and durations exactly. The first use after that
//! unpacks them into their box again. Packing loses nothing: a value unpacked is the value
//! packed, so a connection behaves the same whether it parked or not.
//!
//! Only this crate writes and reads the packed form, so it is never input from a peer; a short
//! or damaged form would read as zeros rather than panic.

use std::cell::{Cell, OnceCell};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use crate::stamp::Stamp;

/// The largest whole number [`Packer::f64`] writes as a number (every whole number up to it is
/// an `f64` exactly).
const WHOLE_MAX: f64 = (1u64 << 53) as f64;

/// [`Packer::f64`]'s low two bits: a whole number follows in the bits above them...
const F64_WHOLE: u64 = 0;
/// ...the value is infinity...
const F64_INFINITE: u64 = 1;
/// ...or the value's 8 bytes follow.
const F64_BITS: u64 = 3;

/// Writes values in the packed form.
#[derive(Debug, Default)]
pub(crate) struct Packer {
    out: Vec<u8>,
}

impl Packer {
    /// An unsigned number, in LEB128 (one byte below 128).
    pub(crate) fn u64(&mut self, mut v: u64) {
        loop {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.out.push(low);
                return;
            }
            self.out.push(low | 0x80);
        }
    }

    /// A signed number, zigzagged (small magnitudes are small either side of zero).
    pub(crate) fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }

    /// A flag, one byte.
    pub(crate) fn bool(&mut self, v: bool) {
        self.out.push(u8::from(v));
    }

    /// A floating-point value, exactly: a whole number from 0 to 2^53 (a window, a weight,
    /// a rate of 0) as a small number, infinity (a slow-start threshold never set) as one
    /// byte, any other as a marker and its 8 bytes. The low two bits say which
    /// ([`F64_WHOLE`], [`F64_INFINITE`], [`F64_BITS`]).
    pub(crate) fn f64(&mut self, v: f64) {
        if v.fract() == 0.0 && v.is_sign_positive() && v <= WHOLE_MAX {
            self.u64((v as u64) << 2 | F64_WHOLE);
        } else if v == f64::INFINITY {
            self.u64(F64_INFINITE);
        } else {
            self.u64(F64_BITS);
            self.bytes(&v.to_bits().to_le_bytes());
        }
    }

    /// A duration, exactly: its nanoseconds as one number, shifted left by one, when they fit
    /// in 63 bits (under 292 years); else a marker, its whole seconds and its nanoseconds.
    pub(crate) fn duration(&mut self, d: Duration) {
        match u64::try_from(d.as_nanos()) {
            Ok(n) if n < 1 << 63 => self.u64(n << 1),
            _ => {
                self.u64(1);
                self.u64(d.as_secs());
                self.u64(u64::from(d.subsec_nanos()));
            }
        }
    }

    /// A moment: [`Stamp::NONE`] as one byte, any other as a flag and its nanoseconds.
    pub(crate) fn stamp(&mut self, s: Stamp) {
        self.bool(s != Stamp::NONE);
        if s != Stamp::NONE {
            self.i64(s.0);
        }
    }

    /// An optional number: a flag, then the number if there is one.
    pub(crate) fn opt_u64(&mut self, v: Option<u64>) {
        self.bool(v.is_some());
        if let Some(v) = v {
            self.u64(v);
        }
    }

    /// An optional duration: a flag, then the duration if there is one.
    pub(crate) fn opt_duration(&mut self, v: Option<Duration>) {
        self.bool(v.is_some());
        if let Some(v) = v {
            self.duration(v);
        }
    }

    /// Bytes as they are (the reader knows how many).
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    /// What was written.
    pub(crate) fn finish(self) -> Box<[u8]> {
        self.out.into_boxed_slice()
    }
}

/// Reads values back from the packed form, in the order they were written. (Bytes missing at
/// the end read as zeros: the input is always a [`Packer`]'s own output.)
#[derive(Debug)]
pub(crate) struct Unpacker<'a> {
    bytes: std::slice::Iter<'a, u8>,
}

impl<'a> Unpacker<'a> {
    /// Reads `bytes` from the start.
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes: bytes.iter(),
        }
    }

    /// Bytes not read yet (a bound on how many more values there are).
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    /// What [`Packer::u64`] wrote.
    pub(crate) fn u64(&mut self) -> u64 {
        let (mut v, mut shift) = (0u64, 0u32);
        for &b in self.bytes.by_ref() {
            v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        v
    }

    /// What [`Packer::i64`] wrote.
    pub(crate) fn i64(&mut self) -> i64 {
        let z = self.u64();
        ((z >> 1) as i64) ^ -((z & 1) as i64)
    }

    /// What [`Packer::bool`] wrote.
    pub(crate) fn bool(&mut self) -> bool {
        self.bytes.next().is_some_and(|&b| b != 0)
    }

    /// What [`Packer::f64`] wrote.
    pub(crate) fn f64(&mut self) -> f64 {
        let n = self.u64();
        match n & 3 {
            F64_WHOLE => (n >> 2) as f64,
            F64_INFINITE => f64::INFINITY,
            _ => {
                let mut b = [0u8; 8];
                self.bytes(&mut b);
                f64::from_bits(u64::from_le_bytes(b))
            }
        }
    }

    /// What [`Packer::duration`] wrote.
    pub(crate) fn duration(&mut self) -> Duration {
        let n = self.u64();
        if n & 1 == 0 {
            return Duration::from_nanos(n >> 1);
        }
        let secs = self.u64();
        let nanos = self.u64();
        Duration::new(secs, u32::try_from(nanos).unwrap_or(0) % 1_000_000_000)
    }

    /// What [`Packer::stamp`] wrote.
    pub(crate) fn stamp(&mut self) -> Stamp {
        if self.bool() {
            Stamp(self.i64())
        } else {
            Stamp::NONE
        }
    }

    /// What [`Packer::bytes`] wrote, as many as `out` holds (zeros past the end).
    pub(crate) fn bytes(&mut self, out: &mut [u8]) {
        for (to, from) in out.iter_mut().zip(self.bytes.by_ref()) {
            *to = *from;
        }
    }

    /// What [`Packer::opt_u64`] wrote.
    pub(crate) fn opt_u64(&mut self) -> Option<u64> {
        self.bool().then(|| self.u64())
    }

    /// What [`Packer::opt_duration`] wrote.
    pub(crate) fn opt_duration(&mut self) -> Option<Duration> {
        self.bool().then(|| self.duration())
    }
}

/// A value that can rest packed: written field by field and read back the same.
pub(crate) trait Pack: Sized {
    /// Writes the value, or returns `false` when it holds what the packed form does not keep
    /// (packets in flight, say): then it stays unpacked, and what was written is dropped.
    fn pack(&self, p: &mut Packer) -> bool;

    /// The value [`pack`](Self::pack) wrote.
    fn unpack(u: &mut Unpacker<'_>) -> Self;
}

/// A value kept in a box while in use and packed while its connection rests: 24 bytes in the
/// connection instead of the value's own size, and, while packed, the packed bytes.
///
/// It reads as the value it holds ([`Deref`], [`DerefMut`]), so code that uses the value does
/// not see the difference, and pays one test of a pointer for it. The first use after a
/// [`park`](Self::park), a read or a change, unpacks the value into its box and drops the
/// packed bytes. Reading it without unpacking: [`peek`](Self::peek).
pub(crate) struct Parked<T> {
    /// The value, unpacked: always, unless it was parked and not used since.
    live: OnceCell<Box<T>>,
    /// The packed value while `live` is empty; empty otherwise. (A cell, so that a read, which
    /// has only `&self`, can drop it when it unpacks.)
    packed: Cell<Box<[u8]>>,
}

impl<T: Pack> Parked<T> {
    /// The value if it is unpacked (for prefetch hints, which must not unpack it).
    pub(crate) fn unpacked(&self) -> Option<&T> {
        self.live.get().map(|b| &**b)
    }

    /// Holds the value `packed` is the packed form of, packed (an empty form allocates
    /// nothing).
    pub(crate) fn resting(packed: Box<[u8]>) -> Self {
        Self {
            live: OnceCell::new(),
            packed: Cell::new(packed),
        }
    }

    /// Holds `value`, unpacked.
    pub(crate) fn new(value: T) -> Self {
        Self {
            live: OnceCell::from(Box::new(value)),
            packed: Cell::default(),
        }
    }

    /// Packs the value and drops its box, unless the value cannot be packed now or is packed
    /// already.
    pub(crate) fn park(&mut self) {
        let Some(live) = self.live.get() else {
            return;
        };
        let mut p = Packer::default();
        if live.pack(&mut p) {
            *self.packed.get_mut() = p.finish();
            self.live = OnceCell::new();
        }
    }

    /// Whether the value rests packed (and was not used since).
    pub(crate) fn is_parked(&self) -> bool {
        self.live.get().is_none()
    }

    /// Runs `f` on the value without unpacking it into its box: on the value itself when it is
    /// unpacked, else on a copy unpacked for the call (for reading a resting connection's
    /// state, its statistics, say, without waking it).
    pub(crate) fn peek<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        match self.live.get() {
            Some(v) => f(v),
            None => {
                let packed = self.packed.take();
                let value = T::unpack(&mut Unpacker::new(&packed));
                self.packed.set(packed);
                f(&value)
            }
        }
    }

    /// Heap bytes the value holds here: its box, or the packed bytes.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        match self.live.get() {
            Some(_) => std::mem::size_of::<T>(),
            None => self.peek_packed_len(),
        }
    }

    #[cfg(test)]
    fn peek_packed_len(&self) -> usize {
        let packed = self.packed.take();
        let n = packed.len();
        self.packed.set(packed);
        n
    }

    /// The first use after a park: the value unpacked into its box, the packed bytes dropped.
    #[cold]
    #[inline(never)]
    fn unpark(&self) -> &T {
        self.live.get_or_init(|| {
            let packed = self.packed.take();
            Box::new(T::unpack(&mut Unpacker::new(&packed)))
        })
    }
}

impl<T: Pack> Deref for Parked<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        match self.live.get() {
            Some(v) => v,
            None => self.unpark(),
        }
    }
}

impl<T: Pack> DerefMut for Parked<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        if self.live.get().is_none() {
            self.unpark();
        }
        self.live.get_mut().expect("unparked above")
    }
}

impl<T: Pack + fmt::Debug> fmt::Debug for Parked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.peek(|v| v.fmt(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One value of every kind the packer writes.
    #[derive(Debug, Clone, PartialEq)]
    struct Sample {
        n: u64,
        s: i64,
        b: bool,
        f: f64,
        d: Duration,
        t: Stamp,
        o: Option<u64>,
        od: Option<Duration>,
    }

    impl Pack for Sample {
        fn pack(&self, p: &mut Packer) -> bool {
            p.u64(self.n);
            p.i64(self.s);
            p.bool(self.b);
            p.f64(self.f);
            p.duration(self.d);
            p.stamp(self.t);
            p.opt_u64(self.o);
            p.opt_duration(self.od);
            true
        }

        fn unpack(u: &mut Unpacker<'_>) -> Self {
            Self {
                n: u.u64(),
                s: u.i64(),
                b: u.bool(),
                f: u.f64(),
                d: u.duration(),
                t: u.stamp(),
                o: u.opt_u64(),
                od: u.opt_duration(),
            }
        }
    }

    fn duration() -> impl Strategy<Value = Duration> {
        prop_oneof![
            (any::<u64>(), 0..1_000_000_000u32).prop_map(|(s, n)| Duration::new(s, n)),
            (0..1u64 << 40).prop_map(Duration::from_nanos),
            Just(Duration::from_nanos((1 << 63) - 1)),
            Just(Duration::from_nanos(1 << 63)),
            Just(Duration::MAX),
        ]
    }

    fn sample() -> impl Strategy<Value = Sample> {
        (
            prop_oneof![0..128u64, any::<u64>()],
            any::<i64>(),
            any::<bool>(),
            prop_oneof![
                any::<f64>().prop_filter("NaN is not equal to itself", |f| !f.is_nan()),
                (0..=1u64 << 53).prop_map(|n| n as f64),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                Just(-0.0),
            ],
            duration(),
            prop_oneof![Just(Stamp::NONE), any::<i64>().prop_map(Stamp)],
            proptest::option::of(any::<u64>()),
            proptest::option::of(duration()),
        )
            .prop_map(|(n, s, b, f, d, t, o, od)| Sample {
                n,
                s,
                b,
                f,
                d,
                t,
                o,
                od,
            })
    }

    proptest! {
        /// Every kind of value comes back exactly as it was packed, and a number below 128
        /// takes one byte.
        #[test]
        fn packed_values_come_back_unchanged(v in sample()) {
            let mut p = Packer::default();
            prop_assert!(v.pack(&mut p));
            let bytes = p.finish();
            let back = Sample::unpack(&mut Unpacker::new(&bytes));
            // to the bit: a negative zero stays negative
            prop_assert_eq!(back.f.to_bits(), v.f.to_bits());
            prop_assert_eq!(back, v.clone());
            let mut one = Packer::default();
            one.u64(v.n % 128);
            prop_assert_eq!(one.finish().len(), 1);
        }

        /// Through a `Parked`: parking keeps the value, a read unpacks it and leaves it equal,
        /// a change after a park lands on the unpacked value, and a peek never unpacks.
        #[test]
        fn a_parked_value_reads_and_changes_as_the_value(v in sample(), n in any::<u64>()) {
            let mut parked = Parked::new(v.clone());
            parked.park();
            prop_assert!(parked.is_parked());
            prop_assert_eq!(parked.peek(Sample::clone), v.clone());
            prop_assert!(parked.is_parked(), "a peek unpacked it");
            prop_assert_eq!(&*parked, &v);
            prop_assert!(!parked.is_parked());
            parked.park();
            parked.n = n;
            let mut want = v;
            want.n = n;
            prop_assert_eq!(&*parked, &want);
            parked.park();
            prop_assert_eq!(parked.peek(Sample::clone), want);
        }
    }

    /// A short or empty packed form reads as zeros, never a panic.
    #[test]
    fn a_truncated_form_reads_as_zeros() {
        let v = Sample::unpack(&mut Unpacker::new(&[]));
        assert_eq!(
            (v.n, v.s, v.b, v.d, v.o),
            (0, 0, false, Duration::ZERO, None)
        );
        assert_eq!(v.t, Stamp::NONE);
        let mut u = Unpacker::new(&[0xff, 0xff]);
        assert_eq!(u.u64(), 0x3fff);
        assert_eq!(u.u64(), 0);
    }

    /// A value that says it cannot be packed stays unpacked.
    #[test]
    fn a_value_that_cannot_be_packed_stays_in_its_box() {
        #[derive(Debug)]
        struct Busy;
        impl Pack for Busy {
            fn pack(&self, _: &mut Packer) -> bool {
                false
            }
            fn unpack(_: &mut Unpacker<'_>) -> Self {
                Busy
            }
        }
        let mut b = Parked::new(Busy);
        b.park();
        assert!(!b.is_parked());
    }
}
