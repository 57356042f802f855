//! The verbs facade: devices, protection domains, memory regions, completion
//! queues, queue pairs and a connection manager over pluggable transports.

pub mod transport;
