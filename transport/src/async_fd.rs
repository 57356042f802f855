//! Readiness of a descriptor as a tokio future (feature `tokio`), for the
//! verbs layer's async API, which forbids `unsafe` and so cannot register
//! a descriptor with tokio itself.

use std::io;
use std::os::fd::OwnedFd;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// A descriptor registered with the current tokio runtime for readability.
#[derive(Debug)]
pub struct AsyncReadiness {
    fd: AsyncFd<OwnedFd>,
}

impl AsyncReadiness {
    /// Registers `fd` (taking ownership) with the current runtime; call
    /// from inside one.
    pub fn new(fd: OwnedFd) -> io::Result<Self> {
        // SAFETY: tokio needs the descriptor to stay open and the same for
        // as long as it is registered. `OwnedFd` closes it only on drop,
        // which is after deregistration (AsyncFd's drop deregisters
        // first), and the `AsyncFd` never leaves this struct, so nobody can
        // reach `get_mut` to swap the descriptor.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
            .map_err(|e| e.into_parts().1)?;
        Ok(AsyncReadiness { fd })
    }

    /// Waits until the descriptor is readable. The readiness is cleared
    /// on return: the caller then handles what made it readable (and
    /// whatever arrives after that makes it readable again).
    pub async fn readable(&self) -> io::Result<()> {
        let mut guard = self.fd.readable().await?;
        guard.clear_ready();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventFd;
    use std::os::fd::AsFd;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_notify_from_another_thread_completes_the_future() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let e = Arc::new(EventFd::new().unwrap());
            let r = AsyncReadiness::new(e.as_fd().try_clone_to_owned().unwrap()).unwrap();
            let pending = tokio::time::timeout(Duration::from_millis(20), r.readable()).await;
            assert!(pending.is_err(), "nothing notified yet");
            let e2 = e.clone();
            let t = std::thread::spawn(move || e2.notify());
            tokio::time::timeout(Duration::from_secs(10), r.readable())
                .await
                .expect("the notify wakes the future")
                .unwrap();
            t.join().unwrap();
            assert!(e.clear());
        });
    }
}
