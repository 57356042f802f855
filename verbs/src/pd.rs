//! Protection domains: a region is reachable only from queue pairs of the
//! domain it was registered in.

use std::sync::Arc;

use ddp::memory::{Access, PdId};

use crate::device::{Device, DeviceShared};
use crate::mr::MemoryRegion;
use crate::mr_buffer::RegionBuffer;
use crate::types::VerbsError;

impl Device {
    /// A new protection domain.
    pub fn alloc_pd(&self) -> ProtectionDomain {
        ProtectionDomain {
            id: self.shared.next_pd(),
            device: self.shared.clone(),
        }
    }
}

/// A protection domain. Cloning gives another handle to the same domain.
#[derive(Debug, Clone)]
pub struct ProtectionDomain {
    pub(crate) id: PdId,
    pub(crate) device: Arc<DeviceShared>,
}

impl ProtectionDomain {
    /// The domain's number on its device.
    pub fn id(&self) -> PdId {
        self.id
    }

    /// Registers a zero-filled region of `len` bytes with `access` rights
    /// (local read is always allowed).
    pub fn register(&self, len: usize, access: Access) -> Result<MemoryRegion, VerbsError> {
        self.device.registry.register(self.id, len, access)
    }

    /// Registers `bytes` in place (no copy), taking ownership of them.
    pub fn register_vec(&self, bytes: Vec<u8>, access: Access) -> Result<MemoryRegion, VerbsError> {
        self.device.registry.register_vec(self.id, bytes, access)
    }

    /// Registers `buffer` in place: placement writes straight into it, and
    /// [`MemoryRegion::deregister_into`] hands it back. Any owned
    /// `AsRef<[u8]> + AsMut<[u8]>` buffer will do (`Vec<u8>`,
    /// `bytes::BytesMut`, a memory map); see [`RegionBuffer`].
    pub fn register_buffer<B: RegionBuffer>(
        &self,
        buffer: B,
        access: Access,
    ) -> Result<MemoryRegion, VerbsError> {
        self.device
            .registry
            .register_buffer(self.id, buffer, access)
    }
}
