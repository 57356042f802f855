//! Counts the TCP payload bytes a device's transport carries, so a tool can
//! check a peer's claims against what actually crossed the wire (a peer
//! that reports more payload than arrived is wrong, whatever its clock
//! says).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use verbs::transport::{
    ListenerId, RecordWriter, StreamId, StreamState, Transport, TransportError, Waker,
};

/// Bytes received and sent so far, shared with the transport that counts.
#[derive(Debug, Default, Clone)]
pub struct WireCounter {
    rx: Arc<AtomicU64>,
    tx: Arc<AtomicU64>,
}

impl WireCounter {
    /// TCP payload bytes taken from the transport.
    pub fn received(&self) -> u64 {
        self.rx.load(Ordering::Relaxed)
    }

    /// TCP payload bytes handed to the transport.
    pub fn sent(&self) -> u64 {
        self.tx.load(Ordering::Relaxed)
    }
}

/// A transport that passes everything through and counts the bytes.
pub struct Counting {
    inner: Box<dyn Transport + Send>,
    counter: WireCounter,
}

impl Counting {
    pub fn wrap(inner: Box<dyn Transport + Send>) -> (Counting, WireCounter) {
        let counter = WireCounter::default();
        (
            Counting {
                inner,
                counter: counter.clone(),
            },
            counter,
        )
    }
}

impl Transport for Counting {
    fn listen(&mut self, port: u16) -> Result<ListenerId, TransportError> {
        self.inner.listen(port)
    }
    fn accept(&mut self, l: ListenerId) -> Option<StreamId> {
        self.inner.accept(l)
    }
    fn unlisten(&mut self, l: ListenerId) {
        self.inner.unlisten(l)
    }
    fn connect(&mut self, remote: SocketAddr) -> Result<StreamId, TransportError> {
        self.inner.connect(remote)
    }
    fn state(&self, s: StreamId) -> StreamState {
        self.inner.state(s)
    }
    fn local_addr(&self, s: StreamId) -> Option<SocketAddr> {
        self.inner.local_addr(s)
    }
    fn peer_addr(&self, s: StreamId) -> Option<SocketAddr> {
        self.inner.peer_addr(s)
    }
    fn send_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<usize, TransportError> {
        let n = self.inner.send_with(s, f)?;
        self.counter.tx.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
    fn send_records_with(
        &mut self,
        s: StreamId,
        f: &mut RecordWriter<'_>,
    ) -> Result<usize, TransportError> {
        let n = self.inner.send_records_with(s, f)?;
        self.counter.tx.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
    fn set_record_packing(&mut self, s: StreamId, packed: bool) {
        self.inner.set_record_packing(s, packed)
    }
    fn recv_with(
        &mut self,
        s: StreamId,
        f: &mut dyn FnMut(&[u8]) -> usize,
    ) -> Result<usize, TransportError> {
        let n = self.inner.recv_with(s, f)?;
        self.counter.rx.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
    fn send_capacity(&self, s: StreamId) -> usize {
        self.inner.send_capacity(s)
    }
    fn recv_queued(&self, s: StreamId) -> usize {
        self.inner.recv_queued(s)
    }
    fn mss(&self, s: StreamId) -> usize {
        self.inner.mss(s)
    }
    fn close(&mut self, s: StreamId) {
        self.inner.close(s)
    }
    fn abort(&mut self, s: StreamId) {
        self.inner.abort(s)
    }
    fn poll(&mut self, now: Instant) -> bool {
        self.inner.poll(now)
    }
    fn poll_send(&mut self, now: Instant) -> bool {
        self.inner.poll_send(now)
    }
    fn flush(&mut self, now: Instant) -> bool {
        self.inner.flush(now)
    }
    fn flush_due(&self) -> bool {
        self.inner.flush_due()
    }
    fn poll_delay(&mut self, now: Instant) -> Option<Duration> {
        self.inner.poll_delay(now)
    }
    fn wait(&mut self, timeout: Option<Duration>) {
        self.inner.wait(timeout)
    }
    fn listen_port(&self, l: ListenerId) -> Option<u16> {
        self.inner.listen_port(l)
    }
    fn waker(&self) -> Option<Waker> {
        self.inner.waker()
    }
}
