//! A connection's channel classes, indexed by channel number: inline when there are few (what
//! games use), on the heap otherwise.

use std::ops::Deref;

use crate::wire::ChannelKind;

/// Most channels kept inline.
const INLINE: usize = 7;

/// The channel classes of a connection. Every connection holds one for its whole life, so the
/// common case, a handful of channels, is kept in the 16 bytes a boxed slice's pointer and
/// length take anyway, instead of a heap chunk of its own (32 bytes under glibc for 3 bytes of
/// classes).
#[derive(Debug, Clone)]
pub(crate) enum ChannelList {
    /// Up to [`INLINE`] classes and how many.
    Inline([ChannelKind; INLINE], u8),
    /// More.
    Heap(Box<[ChannelKind]>),
}

impl From<Vec<ChannelKind>> for ChannelList {
    fn from(kinds: Vec<ChannelKind>) -> Self {
        if kinds.len() <= INLINE {
            let mut inline = [ChannelKind::Unreliable; INLINE];
            inline[..kinds.len()].copy_from_slice(&kinds);
            ChannelList::Inline(inline, kinds.len() as u8)
        } else {
            ChannelList::Heap(kinds.into_boxed_slice())
        }
    }
}

impl Deref for ChannelList {
    type Target = [ChannelKind];

    fn deref(&self) -> &[ChannelKind] {
        match self {
            ChannelList::Inline(kinds, len) => &kinds[..usize::from(*len)],
            ChannelList::Heap(kinds) => kinds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any list of classes reads back as it was given, inline or not, in the size of a boxed
    /// slice.
    #[test]
    fn reads_back_what_it_was_given() {
        assert_eq!(
            std::mem::size_of::<ChannelList>(),
            std::mem::size_of::<Box<[ChannelKind]>>()
        );
        let all = ChannelKind::ALL;
        for n in 0..=20 {
            let kinds: Vec<ChannelKind> = (0..n).map(|i| all[(i * 7 + n) % all.len()]).collect();
            let list = ChannelList::from(kinds.clone());
            assert_eq!(&*list, &kinds[..]);
            assert_eq!(matches!(list, ChannelList::Inline(..)), n <= INLINE);
        }
    }
}
