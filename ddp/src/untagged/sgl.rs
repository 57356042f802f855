//! Scatter of untagged payload into a posted buffer: a scatter/gather list
//! of SGEs in registered memory, each checked for local write before any
//! byte is written.

use crate::error::TaggedError;
use crate::memory::{Access, Memory, OutOfRange, PdId, STag};
use crate::tagged::check;

/// One scatter/gather element: `len` bytes at tagged offset `to` of `stag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sge {
    /// The region the bytes are in.
    pub stag: STag,
    /// The tagged offset (address) of the first byte.
    pub to: u64,
    /// The number of bytes.
    pub len: u32,
}

/// Where the next byte of a message goes: SGE index and offset within it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cursor {
    sge: usize,
    off: u32,
}

/// One contiguous piece of a scatter: `len` bytes at `to` of `stag`, taken
/// from `data[start..start + len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chunk {
    stag: STag,
    to: u64,
    start: usize,
    len: usize,
}

/// The pieces `len` bytes starting at `cursor` fall into, and the cursor
/// after them. `None` if the SGL ends first.
fn plan(sgl: &[Sge], cursor: Cursor, len: usize, mut each: impl FnMut(Chunk)) -> Option<Cursor> {
    let Cursor { mut sge, mut off } = cursor;
    let mut done = 0usize;
    while done < len {
        let s = sgl.get(sge)?;
        let room = s.len.saturating_sub(off);
        if room == 0 {
            sge += 1;
            off = 0;
            continue;
        }
        let n = (room as usize).min(len - done);
        each(Chunk {
            stag: s.stag,
            // Posting refuses SGEs whose end wraps, and off < len.
            to: s.to.wrapping_add(u64::from(off)),
            start: done,
            len: n,
        });
        done += n;
        // n <= room <= u32::MAX.
        off += n as u32;
    }
    Some(Cursor { sge, off })
}

/// Total bytes an SGL holds.
pub(crate) fn capacity(sgl: &[Sge]) -> u64 {
    sgl.iter().map(|s| u64::from(s.len)).sum()
}

/// Index of the first SGE whose `to + len` passes 2^64, if any.
pub(crate) fn first_wrapping(sgl: &[Sge]) -> Option<usize> {
    sgl.iter()
        .position(|s| s.to.checked_add(u64::from(s.len)).is_none())
}

/// Checks every SGE of `sgl` for local write by domain `pd`: what a
/// verbs layer may do when a buffer is posted, to fail early and locally.
pub fn check_sgl<M: Memory + ?Sized>(mem: &M, pd: PdId, sgl: &[Sge]) -> Result<(), TaggedError> {
    for s in sgl {
        check(
            mem.region(s.stag),
            pd,
            s.stag,
            s.to,
            s.len as usize,
            Access::LOCAL_WRITE,
        )?;
    }
    Ok(())
}

/// Writes `data` into `sgl` from `cursor` on, returning the new cursor.
///
/// Every piece is checked (valid, same domain, local write, in bounds)
/// before the first byte is written, so a refused scatter writes nothing.
/// The caller has made sure the SGL has room for `data`.
pub(crate) fn scatter<M: Memory + ?Sized>(
    mem: &mut M,
    pd: PdId,
    sgl: &[Sge],
    cursor: Cursor,
    data: &[u8],
) -> Result<Cursor, TaggedError> {
    // The usual segment lands inside the SGE the cursor is in: one piece,
    // checked and written in one call.
    if let Some(s) = sgl.get(cursor.sge) {
        let room = s.len.saturating_sub(cursor.off);
        if !data.is_empty() && data.len() <= room as usize {
            let to = s.to.wrapping_add(u64::from(cursor.off));
            mem.place_checked(s.stag, pd, to, data, Access::LOCAL_WRITE)?;
            return Ok(Cursor {
                sge: cursor.sge,
                // data.len() <= room <= u32::MAX.
                off: cursor.off + data.len() as u32,
            });
        }
    }
    scatter_by_pieces(mem, pd, sgl, cursor, data)
}

/// [`scatter`] one piece at a time: every piece checked, then every piece
/// written.
fn scatter_by_pieces<M: Memory + ?Sized>(
    mem: &mut M,
    pd: PdId,
    sgl: &[Sge],
    cursor: Cursor,
    data: &[u8],
) -> Result<Cursor, TaggedError> {
    let mut refused = None;
    let end = plan(sgl, cursor, data.len(), |c| {
        if refused.is_none() {
            refused = check(
                mem.region(c.stag),
                pd,
                c.stag,
                c.to,
                c.len,
                Access::LOCAL_WRITE,
            )
            .err();
        }
    });
    if let Some(e) = refused {
        return Err(e);
    }
    let Some(end) = end else {
        return Err(TaggedError::Memory(OutOfRange {
            stag: 0,
            offset: 0,
            len: data.len(),
        }));
    };
    let mut failed = None;
    plan(sgl, cursor, data.len(), |c| {
        if failed.is_some() {
            return;
        }
        // The check above passed for this exact piece, so base <= to.
        let offset = match mem.region(c.stag) {
            Some(r) => c.to.wrapping_sub(r.base),
            None => {
                failed = Some(TaggedError::InvalidStag(c.stag.0));
                return;
            }
        };
        let piece = data.get(c.start..c.start + c.len).unwrap_or_default();
        if let Err(e) = mem.write(c.stag, offset, piece) {
            failed = Some(TaggedError::Memory(e));
        }
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::RegionTable;

    const PD: PdId = PdId(1);

    fn mem() -> RegionTable {
        let mut t = RegionTable::new();
        t.register(
            STag(0x100),
            PD,
            0x1000,
            Access::LOCAL_WRITE,
            vec![0; 16],
            true,
        );
        t.register(
            STag(0x200),
            PD,
            0x2000,
            Access::LOCAL_WRITE,
            vec![0; 16],
            true,
        );
        t.register(
            STag(0x300),
            PD,
            0x3000,
            Access::REMOTE_READ,
            vec![0; 16],
            true,
        );
        t
    }

    fn sge(stag: u32, to: u64, len: u32) -> Sge {
        Sge {
            stag: STag(stag),
            to,
            len,
        }
    }

    #[test]
    fn scatter_spans_sges_and_skips_empty_ones() {
        let mut m = mem();
        let sgl = [
            sge(0x100, 0x1004, 4),
            sge(0x200, 0x2000, 0),
            sge(0x200, 0x2008, 8),
        ];
        let c = scatter(&mut m, PD, &sgl, Cursor::default(), b"abcdef").unwrap();
        assert_eq!(c, Cursor { sge: 2, off: 2 });
        let c = scatter(&mut m, PD, &sgl, c, b"ghij").unwrap();
        assert_eq!(c, Cursor { sge: 2, off: 6 });
        assert_eq!(&m.bytes(STag(0x100)).unwrap()[4..8], b"abcd");
        assert_eq!(&m.bytes(STag(0x200)).unwrap()[8..14], b"efghij");
        assert_eq!(m.bytes(STag(0x200)).unwrap()[..8], [0; 8]);
    }

    #[test]
    fn exact_fill_leaves_cursor_at_end_of_sge() {
        let mut m = mem();
        let sgl = [sge(0x100, 0x1000, 4)];
        let c = scatter(&mut m, PD, &sgl, Cursor::default(), b"wxyz").unwrap();
        assert_eq!(c, Cursor { sge: 0, off: 4 });
        // Nothing more fits.
        assert!(scatter(&mut m, PD, &sgl, c, b"!").is_err());
        assert_eq!(&m.bytes(STag(0x100)).unwrap()[..4], b"wxyz");
    }

    #[test]
    fn a_bad_later_sge_stops_the_whole_scatter() {
        let mut m = mem();
        let before = m.clone();
        let sgl = [sge(0x100, 0x1000, 4), sge(0x300, 0x3000, 8)];
        assert_eq!(
            scatter(&mut m, PD, &sgl, Cursor::default(), b"abcdef"),
            Err(TaggedError::AccessRights(0x300))
        );
        assert_eq!(m.bytes(STag(0x100)), before.bytes(STag(0x100)));
    }

    #[test]
    fn sge_outside_its_region_is_refused() {
        let mut m = mem();
        let sgl = [sge(0x100, 0x100c, 8)];
        assert!(matches!(
            scatter(&mut m, PD, &sgl, Cursor::default(), b"abcdefgh"),
            Err(TaggedError::BaseBounds { .. })
        ));
        // Only the part that is written is checked: 4 bytes fit.
        assert!(scatter(&mut m, PD, &sgl, Cursor::default(), b"abcd").is_ok());
    }

    #[test]
    fn check_sgl_checks_every_sge() {
        let m = mem();
        assert_eq!(check_sgl(&m, PD, &[sge(0x100, 0x1000, 16)]), Ok(()));
        assert_eq!(
            check_sgl(&m, PD, &[sge(0x100, 0x1000, 16), sge(0x999, 0, 1)]),
            Err(TaggedError::InvalidStag(0x999))
        );
        assert_eq!(
            check_sgl(&m, PdId(2), &[sge(0x100, 0x1000, 1)]),
            Err(TaggedError::StagNotAssociated(0x100))
        );
    }

    #[test]
    fn capacity_and_wrap_detection() {
        let sgl = [sge(1, 0, u32::MAX), sge(1, 0, u32::MAX)];
        assert_eq!(capacity(&sgl), 2 * u64::from(u32::MAX));
        assert_eq!(first_wrapping(&sgl), None);
        assert_eq!(
            first_wrapping(&[sge(1, 0, 1), sge(1, u64::MAX, 1)]),
            Some(1)
        );
        assert_eq!(first_wrapping(&[sge(1, u64::MAX, 0)]), None);
    }

    /// [`mem`] and 0x400, a region of another domain.
    fn mixed() -> RegionTable {
        let mut t = mem();
        t.register(
            STag(0x400),
            PdId(2),
            0x4000,
            Access::LOCAL_WRITE,
            vec![0; 16],
            true,
        );
        t
    }

    proptest::proptest! {
        /// The one-piece path answers as the piece-by-piece one: the same
        /// result and the same bytes in memory, refusals included.
        #[test]
        fn scatter_agrees_with_scatter_by_pieces(
            sgl in proptest::collection::vec(
                (
                    proptest::sample::select(vec![0x100u32, 0x200, 0x300, 0x400, 0x999]),
                    0x0ff0u64..0x1020,
                    0u32..20,
                ),
                1..4,
            ),
            sge_at in 0usize..4,
            off in 0u32..20,
            len in 0usize..24,
        ) {
            // Every region at the same base: the offsets matter, not the STag.
            let sgl: Vec<Sge> = sgl
                .into_iter()
                .map(|(stag, to, len)| sge(stag, to + u64::from(stag >> 8) * 0x1000 - 0x1000, len))
                .collect();
            let cursor = Cursor { sge: sge_at, off };
            let data: Vec<u8> = (1..=len as u8).collect();
            let (mut a, mut b) = (mixed(), mixed());
            let fast = scatter(&mut a, PD, &sgl, cursor, &data);
            let slow = scatter_by_pieces(&mut b, PD, &sgl, cursor, &data);
            proptest::prop_assert_eq!(fast, slow);
            for stag in [0x100, 0x200, 0x300, 0x400] {
                proptest::prop_assert_eq!(a.bytes(STag(stag)), b.bytes(STag(stag)));
            }
        }
    }
}
