//! Whether an access to a region is allowed, in siw's order (see
//! [`tagged`](crate::tagged)): a pure function of what the memory answers
//! for the STag, shared by tagged placement and the [`Memory`] seam's
//! checked write.
//!
//! [`Memory`]: crate::memory::Memory

use crate::error::TaggedError;
use crate::region::{Access, PdId, RegionInfo, STag};

/// Validates `len` bytes at tagged offset `to` of `stag` for access `need`,
/// returning the offset of `to` within the region.
///
/// `region` is what the memory answers for `stag` (`None`: not valid). A
/// zero-length access is not validated and yields offset 0.
#[inline]
pub fn check(
    region: Option<RegionInfo>,
    qp_pd: PdId,
    stag: STag,
    to: u64,
    len: usize,
    need: Access,
) -> Result<u64, TaggedError> {
    if len == 0 {
        return Ok(0);
    }
    let region = region.ok_or(TaggedError::InvalidStag(stag.0))?;
    if region.pd != qp_pd {
        return Err(TaggedError::StagNotAssociated(stag.0));
    }
    if !region.access.contains(need) {
        return Err(TaggedError::AccessRights(stag.0));
    }
    // usize is at most 64 bits on every supported target.
    let len = len as u64;
    if to.checked_add(len).is_none() {
        return Err(TaggedError::ToWrap {
            stag: stag.0,
            to,
            len,
        });
    }
    let bounds = TaggedError::BaseBounds {
        stag: stag.0,
        to,
        len,
    };
    // Offset-relative so a region ending at 2^64 cannot overflow `base + len`.
    let offset = to.checked_sub(region.base).ok_or(bounds)?;
    let end = offset.checked_add(len).ok_or(bounds)?;
    if end > region.len {
        return Err(bounds);
    }
    Ok(offset)
}
